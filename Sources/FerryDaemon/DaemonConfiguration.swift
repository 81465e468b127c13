public import FerryCore
public import FerryNetwork
public import Foundation

/// ferryd's settings: where its files are and the limits it keeps. `ferryd` fills the paths
/// from the environment (`FERRY_DATA_DIR`, `FERRY_RUNTIME_DIR`, XDG); tests use temporary ones.
///
/// ```swift
/// var configuration = DaemonConfiguration(
///     socketURL: runtime.appendingPathComponent("ferryd.sock"),
///     storeURL: data.appendingPathComponent("ferryd.sqlite"),
///     dataDirectory: data)
/// configuration.globalTaskLimit = 4
/// ```
public struct DaemonConfiguration: Sendable {
    public var socketURL: URL
    public var storeURL: URL
    /// Containers of sessions without an app group live under `sessions/` here, and of app
    /// groups under `groups/` (unless an ``ContainerLocating`` says otherwise).
    public var dataDirectory: URL
    public var daemonVersion: String = "0.1.0"
    /// Tasks running at once, all sessions together.
    public var globalTaskLimit: Int = 16
    /// Bytes a client may leave unread before its connection is closed.
    public var maximumOutboundBytes: Int = 8 << 20
    /// How long a client's socket may stay full before its connection is closed.
    public var stallTimeout: TimeInterval = 30
    /// Requests one connection may have read and not yet answered; past it, ferryd stops
    /// reading that connection until answers go out (the client's writes then block).
    public var maximumRequestsInFlight: Int = 256
    /// The largest frame a client may send, in bytes.
    public var maximumFrameSize: Int = 1 << 20
    /// Connections open at once. Only the user's own processes may connect, so this is the
    /// limit per uid; one more is refused with `busy` (clients retry with backoff).
    public var maximumConnections: Int = 256
    /// A connection that sends no hello within this long is closed.
    public var handshakeTimeout: TimeInterval = 5
    /// A connection that owns and watches no session and has sent nothing for this long is
    /// closed (with a `goodbye` saying so). Connections holding a session stay open.
    public var idleTimeout: TimeInterval = 120
    /// The most response body a data or upload task keeps for its `data` events. More fails
    /// the task with `dataLengthExceedsMaximum` (use a download task for big bodies).
    public var maximumResponseBodySize: Int = 4 << 20
    /// Live progress is sent at most this often per task.
    public var progressInterval: TimeInterval = 0.1
    /// Progress and resume points are written to the store at most this often per task.
    public var progressPersistInterval: TimeInterval = 1
    /// The retry policy of tasks submitted without one (the CLI, raw protocol clients): attempts
    /// until the resource deadline, backoff from 1 s to 10 min. A background `Session` sends
    /// its configuration's policy with each task.
    public var defaultRetryPolicy: RetryPolicy = .untilResourceTimeout
    /// A launched app that has not attached after this long is launched again (with backoff).
    public var launchConnectTimeout: TimeInterval = 60
    /// Finished tasks whose events were all acknowledged are forgotten this long after their
    /// last change (their idempotency keys with them).
    public var finishedTaskRetention: TimeInterval = 7 * 24 * 3600

    /// How ferryd follows link and route changes (`FERRYD_NETWORK_MONITOR`: `netlink`, `poll`,
    /// `off`). Tasks wait while no link that is up routes to their host.
    public var networkMonitoring: NetworkMonitoring = .automatic
    /// Interface names ferryd counts as cellular, expensive (metered) or constrained.
    public var networkInterfaceClasses = NetworkInterfaceClasses()
    /// The D-Bus address of the system bus, where ferryd reads which links NetworkManager
    /// counts as metered (`DBUS_SYSTEM_BUS_ADDRESS`); nil reads interface names alone
    /// (`FERRYD_NETWORK_MANAGER=off`). No bus or no NetworkManager on it is not an error.
    public var networkManagerBusAddress: String? = DBusConnection.systemBusAddress
    /// The kernel's power-supply class, read for discretionary tasks (mains or battery).
    public var powerSupplyDirectory = URL(fileURLWithPath: "/sys/class/power_supply")

    public init(socketURL: URL, storeURL: URL, dataDirectory: URL) {
        self.socketURL = socketURL
        self.storeURL = storeURL
        self.dataDirectory = dataDirectory
    }
}
