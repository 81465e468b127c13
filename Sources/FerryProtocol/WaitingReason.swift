public import Foundation

/// Why a task is not moving, in ``TaskInfo/waitingReason``: what `ferry explain` prints.
///
/// ```swift
/// if let reason = task.waitingReason {
///     print(reason.message)                        // "server asked to retry at 12:00:02 (HTTP 503)"
///     if let until = reason.until { print("next try", until) }
/// }
/// ```
public struct WaitingReason: Hashable, Sendable, Codable {
    /// What holds the task. An open set, like error codes: a newer daemon may add kinds,
    /// which older clients show as they are.
    public struct Kind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        // Codable as a plain string: the standard library's RawRepresentable conformance.
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The task's `earliestBeginDate` is in the future (`until`).
        public static let beginDate = Kind(rawValue: "beginDate")
        /// An attempt failed (`error`); the next one is at `until` (exponential backoff).
        public static let backingOff = Kind(rawValue: "backingOff")
        /// The server answered 429 or 503 with `Retry-After`; no request before `until`.
        public static let retryAfter = Kind(rawValue: "retryAfter")
        /// The session already runs `httpMaximumConnectionsPerHost` tasks against `host`.
        public static let hostLimit = Kind(rawValue: "hostLimit")
        /// ferryd already runs as many tasks as it allows at once.
        public static let globalLimit = Kind(rawValue: "globalLimit")
        /// The task was suspended; resume it to go on.
        public static let suspended = Kind(rawValue: "suspended")
        /// Runnable; it starts as soon as the scheduler gets to it.
        public static let ready = Kind(rawValue: "ready")
        /// No route to the task's host: no link is up with a route there (a default route, for
        /// a host name). It starts within a second of the network coming back.
        public static let noNetwork = Kind(rawValue: "noNetwork")
        /// The route is over an expensive (metered) link and the session does not allow it.
        public static let expensiveNetwork = Kind(rawValue: "expensiveNetwork")
        /// The route is over a constrained link and the session does not allow it.
        public static let constrainedNetwork = Kind(rawValue: "constrainedNetwork")
        /// The route is over a cellular link and the session does not allow it.
        public static let cellularNetwork = Kind(rawValue: "cellularNetwork")
        /// A discretionary task waits for an unmetered, unconstrained link and mains power.
        public static let discretionary = Kind(rawValue: "discretionary")
        /// Running, its request held until the session's app answers an authentication
        /// challenge (a `401`) that ferryd asked it about (`host`, `until` is nil).
        public static let authenticationChallenge = Kind(rawValue: "authenticationChallenge")

        /// Whether the hold is a network or power condition (what `taskIsWaitingForConnectivity` reports).
        public var isConnectivity: Bool {
            [Kind.noNetwork, .expensiveNetwork, .constrainedNetwork, .cellularNetwork, .discretionary].contains(self)
        }
    }

    public var kind: Kind
    /// When the hold ends, for `beginDate`, `backingOff` and `retryAfter`.
    public var until: Date?
    /// The host, for `hostLimit` and the network kinds.
    public var host: String?
    /// The error of the failed attempt, for `backingOff` and `retryAfter`.
    public var error: FerryProtocolError?
    /// A sentence for a person.
    public var message: String

    public init(kind: Kind, until: Date? = nil, host: String? = nil, error: FerryProtocolError? = nil, message: String) {
        self.kind = kind
        self.until = until
        self.host = host
        self.error = error
        self.message = message
    }
}

/// A task and why it waits: ``DaemonMessage/waitingForConnectivity(_:)``.
public struct TaskWaiting: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var taskIdentifier: Int
    public var reason: WaitingReason

    public init(sessionIdentifier: String, taskIdentifier: Int, reason: WaitingReason) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.reason = reason
    }
}
