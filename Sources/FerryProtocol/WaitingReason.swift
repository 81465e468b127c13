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
    }

    public var kind: Kind
    /// When the hold ends, for `beginDate`, `backingOff` and `retryAfter`.
    public var until: Date?
    /// The host, for `hostLimit`.
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
