package import Foundation
import Glibc
package import Logging

/// Follows the network namespace's links and routes (and the power supply) on a thread of its
/// own and hands each reading that differs from the last to `publish`, on that thread: ferryd's
/// scheduler (`NetworkMonitorService`) and an app's in-process sessions (``NetworkGate``) both
/// read the network this way.
///
/// Netlink reads and `poll` block, so they run on a thread of their own, never on Swift
/// concurrency's pool. It reads once at start, then after each change notification (50 ms
/// later, so a burst of changes is read once), and every `recheckInterval` anyway (power
/// changes, a lost notification). Polling mode reads every interval. NetworkManager's metered
/// devices come from a thread of their own (``NetworkManagerWatch``), whose news is a change
/// notification like netlink's. `stop()` ends the threads.
///
/// ```swift
/// let watch = NetworkWatch(monitoring: .automatic, classes: .fromEnvironment(), networkManagerBus: nil,
///                          powerSupply: PowerSupply.systemDirectory, logger: logger) { conditions in
///     print(conditions.path?.hasDefaultRoute ?? true)
/// }
/// defer { watch.stop() }
/// ```
package final class NetworkWatch: Sendable {
    /// Written to stop the thread (a pipe: `poll` waits on it beside the netlink socket).
    private let stopPipe: (read: Int32, write: Int32)

    /// With netlink, how often the watch reads anyway.
    static let recheckInterval = 10.0

    /// How long the first reading waits for NetworkManager's first answer (a bus that is there
    /// answers in milliseconds; one that is not fails at once).
    static let networkManagerWait: Int32 = 1000

    /// Starts the thread (none with `.off`: nothing is ever published).
    package init(
        monitoring: NetworkMonitoring, classes: NetworkInterfaceClasses, networkManagerBus: String?, powerSupply: URL, logger: Logger,
        threadName: String = "ferry network monitor", publish: @escaping @Sendable (NetworkConditions) -> Void
    ) {
        stopPipe = monitoring == .off ? (-1, -1) : wakeUpPipe() ?? (-1, -1)
        guard monitoring != .off, stopPipe.read >= 0 else {
            if monitoring != .off { logger.error("no network monitor: cannot make its pipe", metadata: ["errno": "\(errno)"]) }
            return
        }
        let stopFD = stopPipe.read
        let thread = Thread {
            let manager = networkManagerBus.flatMap { NetworkManagerWatch(address: $0, logger: logger) }
            Self.watch(monitoring, classes: classes, manager: manager, powerSupply: powerSupply, stop: stopFD, logger: logger, publish: publish)
            manager?.stop()
            close(stopFD)
        }
        thread.name = threadName
        thread.start()
    }

    /// Where NetworkManager is asked which links are metered: the system bus
    /// (`DBUS_SYSTEM_BUS_ADDRESS`, else its usual socket); `FERRYD_NETWORK_MANAGER=off` asks nobody.
    package static func networkManagerBus(_ environment: [String: String], default systemBus: String? = DBusConnection.systemBusAddress) -> String? {
        if environment["FERRYD_NETWORK_MANAGER"] == "off" { return nil }
        guard let address = environment["DBUS_SYSTEM_BUS_ADDRESS"], !address.isEmpty else { return systemBus }
        return address
    }

    package func stop() {
        if stopPipe.write >= 0 {
            var byte: UInt8 = 1
            _ = write(stopPipe.write, &byte, 1)
        }
    }

    deinit {
        if stopPipe.write >= 0 { close(stopPipe.write) }
    }

    private static func watch(
        _ monitoring: NetworkMonitoring, classes: NetworkInterfaceClasses, manager: NetworkManagerWatch?, powerSupply: URL, stop: Int32,
        logger: Logger, publish: (NetworkConditions) -> Void
    ) {
        var changes: Int32 = -1
        var interval = recheckInterval
        switch monitoring {
        case .automatic:
            do {
                changes = try RouteNetlink.changeSocket()
            } catch {
                logger.warning("netlink is not available; polling the network every 2 s", metadata: ["error": "\(error)"])
                interval = 2
            }
        case .polling(let seconds): interval = max(0.1, seconds)
        case .off: return
        }
        defer { if changes >= 0 { close(changes) } }
        var last: NetworkConditions?
        var failing = false
        func read() {
            do {
                let path = changes >= 0 ? try RouteNetlink.read() : try ProcNetwork.read()
                let devices = manager?.current
                let conditions = NetworkConditions(
                    path: path.classified(by: classes, networkManager: devices), isOnMains: PowerSupply.isOnMains(root: powerSupply),
                    source: (changes >= 0 ? "netlink" : "proc") + (devices != nil ? "+networkmanager" : ""))
                failing = false
                guard conditions != last else { return }
                last = conditions
                publish(conditions)
            } catch {
                if !failing { logger.error("cannot read the network's links and routes", metadata: ["error": "\(error)"]) }
                failing = true
            }
        }
        let managerChanges = manager?.changes ?? -1
        if managerChanges >= 0 {
            var first = [pollfd(fd: stop, events: Int16(POLLIN), revents: 0), pollfd(fd: managerChanges, events: Int16(POLLIN), revents: 0)]
            if poll(&first, 2, networkManagerWait) > 0, first[0].revents != 0 { return }
            manager?.drainChanges()
        }
        read()
        // Until stop() writes to the pipe; each turn waits in poll (a negative fd is skipped).
        while true {
            var fds = [stop, changes, managerChanges].map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, 3, Int32(interval * 1000))
            if ready < 0, errno == EINTR { continue }
            if ready < 0 {
                logger.error("the network monitor stops: poll failed", metadata: ["errno": "\(errno)"])
                return
            }
            if fds[0].revents != 0 { return }
            if fds[1].revents != 0 || fds[2].revents != 0 {
                if changes >= 0 { drain(changes) }
                manager?.drainChanges()
                var quiet = [pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
                if poll(&quiet, 1, 50) > 0 { return }
                if changes >= 0 { drain(changes) }
                manager?.drainChanges()
            }
            read()
        }
    }

    /// Reads what notifications wait (their content is not needed: ferryd reads the whole
    /// state again). ENOBUFS (notifications were lost) needs nothing more for the same reason.
    private static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        for _ in 0..<1000 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0, errno != ENOBUFS || count == 0 { return }
        }
    }
}

/// A pipe that wakes a thread's `poll` (one byte written; closing the write end wakes it too),
/// made close-on-exec and non-blocking at once: set afterwards, an app ferryd launches
/// meanwhile on another thread would inherit it, and a reader emptying it or a writer filling
/// it would block. A socket pair, as Swift's Glibc does not offer `pipe2`.
func wakeUpPipe() -> (read: Int32, write: Int32)? {
    var fds: [Int32] = [-1, -1]
    let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
    guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { return nil }
    return (fds[0], fds[1])
}
