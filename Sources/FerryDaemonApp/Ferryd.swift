// ferryd: the Ferry background-transfer daemon. Thin: arguments, paths, signals, logging;
// everything else is FerryDaemon. See docs/ferryd.md.
import ArgumentParser
import FerryDaemon
import FerryStore
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

    func run() async throws {
        // Writing past RLIMIT_FSIZE must fail the write (EFBIG), not kill ferryd.
        signal(SIGXFSZ, SIG_IGN)
        let environment = ProcessInfo.processInfo.environment
        let level = Logger.Level(rawValue: logLevel ?? environment["FERRYD_LOG_LEVEL"] ?? "info") ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "ferryd")
        let paths = DaemonPaths(runtimeDirectory: runtimeDirectory, dataDirectory: dataDirectory, environment: environment)
        try paths.createFolders()

        let systemdSocket = DaemonServer.systemdSocket(environment: environment)
        guard let lock = try InstanceLock.acquire(at: paths.lockURL) else {
            print("ferryd is already running (\(paths.lockURL.path) is locked)")
            return
        }
        defer { lock.release() }

        var configuration = DaemonConfiguration(socketURL: paths.socketURL, storeURL: paths.storeURL, dataDirectory: paths.dataDirectory)
        configuration.globalTaskLimit = globalTaskLimit
        let store = try FerryStore(path: paths.storeURL.path, logger: Logger(label: "ferryd.store"))
        let daemon = try Daemon(configuration: configuration, store: store, logger: logger)
        let server = try await DaemonServer.bind(daemon: daemon, socketURL: paths.socketURL, systemdSocket: systemdSocket)
        let service = DaemonService(daemon: daemon, server: server)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        try? store.close()
        logger.notice("ferryd stopped")
    }
}

/// Runs the daemon until SIGTERM/SIGINT or a `stop` request.
struct DaemonService: Service {
    let daemon: Daemon
    let server: DaemonServer

    func run() async throws {
        let server = self.server
        try await daemon.start(onStop: { Task { await server.close() } })
        try await withGracefulShutdownHandler {
            try await server.closeFuture()
        } onGracefulShutdown: {
            Task {
                await daemon.shutdown()
                await server.close()
            }
        }
        await daemon.shutdown()
    }
}

/// Where ferryd's files are, from flags, the environment and XDG (docs/ferryd.md, "Files").
struct DaemonPaths {
    var runtimeDirectory: URL
    var dataDirectory: URL

    init(runtimeDirectory: String?, dataDirectory: String?, environment: [String: String]) {
        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let runtime = runtimeDirectory ?? nonEmpty("FERRY_RUNTIME_DIR")
            ?? nonEmpty("XDG_RUNTIME_DIR").map { $0 + "/ferry" } ?? "/tmp/ferry-\(getuid())"
        let home = nonEmpty("HOME") ?? NSHomeDirectory()
        let data = dataDirectory ?? nonEmpty("FERRY_DATA_DIR")
            ?? (nonEmpty("XDG_DATA_HOME") ?? home + "/.local/share") + "/ferry"
        self.runtimeDirectory = URL(fileURLWithPath: runtime, isDirectory: true)
        self.dataDirectory = URL(fileURLWithPath: data, isDirectory: true)
    }

    var socketURL: URL { runtimeDirectory.appendingPathComponent("ferryd.sock") }
    var lockURL: URL { runtimeDirectory.appendingPathComponent("ferryd.lock") }
    var storeURL: URL { dataDirectory.appendingPathComponent("ferryd.sqlite") }

    func createFolders() throws {
        for folder in [runtimeDirectory, dataDirectory] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
    }
}
