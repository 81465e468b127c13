// ferryd: the Ferry background-transfer daemon. Thin: arguments, paths, signals, logging;
// everything else is FerryDaemon. See docs/ferryd.md.
import ArgumentParser
import FerryApps
import FerryDaemon
import FerryNetwork
import FerryStore
import FerrySystem
import Foundation
import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

@main
struct Ferryd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferryd",
        abstract: "Carries background transfers for Ferry apps; one per user, started on demand or by systemd.")

    @Option(help: "Folder of the socket and lock (default: $FERRY_RUNTIME_DIR, else $XDG_RUNTIME_DIR/ferry, else /tmp/ferry-UID).")
    var runtimeDirectory: String?

    @Option(help: "Folder of the store and containers (default: $FERRY_DATA_DIR, else $XDG_DATA_HOME/ferry, else ~/.local/share/ferry).")
    var dataDirectory: String?

    @Option(help: "Tasks running at once, all sessions together.")
    var globalTaskLimit: Int = 16

    @Option(help: "trace, debug, info, notice, warning, error (default: $FERRYD_LOG_LEVEL, else info).")
    var logLevel: String?

    @Option(help: """
        How to follow network changes: netlink (polls /proc if netlink cannot be opened), poll[:SECONDS] \
        (every 2 s by default), off (every host counts as reachable). Default: $FERRYD_NETWORK_MONITOR, else netlink.
        """)
    var networkMonitor: String?

    @Option(help: """
        Also serve the metrics over HTTP, GET /metrics, on this local address (HOST:PORT, e.g. \
        127.0.0.1:9464; port 0 picks one, logged). Default: $FERRYD_METRICS_ADDRESS, else none.
        """)
    var metricsAddress: String?

    func run() async throws {
        // Writing past RLIMIT_FSIZE must fail the write (EFBIG), not kill ferryd.
        signal(SIGXFSZ, SIG_IGN)
        // SIGTERM and SIGINT are caught from here on, before the socket answers anyone: one
        // that comes while the store opens is kept and stops ferryd as soon as it can run.
        let stopSignals = StopOnSignals()
        defer { stopSignals.handling.stop() }
        let environment = ProcessInfo.processInfo.environment
        let level = Logger.Level(rawValue: logLevel ?? environment["FERRYD_LOG_LEVEL"] ?? "info") ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "ferryd")
        var paths = try FerryPaths(environment: environment)
        if let runtimeDirectory { paths.runtimeDirectory = URL(fileURLWithPath: runtimeDirectory, isDirectory: true) }
        if let dataDirectory { paths.dataDirectory = URL(fileURLWithPath: dataDirectory, isDirectory: true) }
        try paths.prepare()

        let systemdSocket = DaemonServer.systemdSocket(environment: environment)
        guard let lock = try InstanceLock.acquire(at: paths.lockURL) else {
            print("ferryd is already running (\(paths.lockURL.path) is locked)")
            return
        }
        defer { lock.release() }

        var configuration = DaemonConfiguration(socketURL: paths.socketURL, storeURL: paths.storeURL, dataDirectory: paths.dataDirectory)
        configuration.globalTaskLimit = globalTaskLimit
        configuration.networkMonitoring = try Self.networkMonitoring(networkMonitor ?? environment["FERRYD_NETWORK_MONITOR"])
        configuration.networkInterfaceClasses = NetworkInterfaceClasses(environment: environment)
        configuration.networkManagerBusAddress = NetworkWatch.networkManagerBus(environment, default: configuration.networkManagerBusAddress)
        if let power = environment["FERRYD_POWER_SUPPLY_DIR"] { configuration.powerSupplyDirectory = URL(fileURLWithPath: power) }
        let store = try FerryStore(path: paths.storeURL.path, logger: Logger(label: "ferryd.store"))
        let registry = AppRegistry(paths: paths)
        let daemon = try Daemon(
            configuration: configuration, store: store, apps: RegistryApps(registry: registry, logger: logger),
            containers: PathsContainers(paths: paths),
            launcher: RegistryLauncher(registry: registry, launcher: AppLauncher(paths: paths, logger: logger)),
            logger: logger)
        let server = try await DaemonServer.bind(daemon: daemon, socketURL: paths.socketURL, systemdSocket: systemdSocket)
        // The daemon's services and the listener; whichever ends first (a `stop` request, the
        // socket gone) shuts the others down, and ferryd exits 0: a supervisor's
        // Restart=on-failure must not take an asked-for stop for a crash.
        var services = daemon.services() + [ListenerService(daemon: daemon, server: server), stopSignals]
        if let address = metricsAddress ?? environment["FERRYD_METRICS_ADDRESS"], !address.isEmpty {
            let (host, port) = try Self.hostAndPort(address)
            let metrics = try await MetricsListener.bind(daemon: daemon, host: host, port: port)
            let shownHost = host.contains(":") ? "[\(host)]" : host
            logger.notice("metrics over HTTP", metadata: ["url": "http://\(shownHost):\(metrics.address.port ?? port)/metrics"])
            services.append(metrics)
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup) },
                logger: logger))
        try await group.run()
        try? store.close()
        logger.notice("ferryd stopped")
    }

    /// Ends when SIGTERM or SIGINT arrives (or the group shuts down for another reason), which
    /// shuts the group down gracefully. Not the group's own `gracefulShutdownSignals`: those
    /// are caught only once `run()` has begun, and ferryd answers on its socket before that,
    /// so a supervisor's SIGTERM in between killed it with status 143.
    struct StopOnSignals: Service {
        let handling: Signals.Handling
        private let arrived: AsyncStream<Int32>

        init() {
            let (arrived, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(1))
            self.arrived = arrived
            handling = Signals.handle([SIGTERM, SIGINT]) { number in continuation.yield(number) }
        }

        func run() async {
            for await number in arrived.cancelOnGracefulShutdown() {
                Logger(label: "ferryd").notice("stopping", metadata: ["signal": "\(number == SIGTERM ? "SIGTERM" : "SIGINT")"])
                return
            }
        }
    }

    static func networkMonitoring(_ text: String?) throws -> NetworkMonitoring {
        guard let text, !text.isEmpty, text != "netlink" else { return .automatic }
        if text == "off" { return .off }
        if text == "poll" { return .polling(interval: 2) }
        if text.hasPrefix("poll:"), let seconds = Double(text.dropFirst(5)), seconds > 0 { return .polling(interval: seconds) }
        throw ValidationError("network monitor '\(text)': expected netlink, poll, poll:SECONDS or off")
    }

    /// `HOST:PORT` (`[::1]:9464` for IPv6).
    static func hostAndPort(_ text: String) throws -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("metrics address '\(text)': expected HOST:PORT, such as 127.0.0.1:9464")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }
}
