public import Foundation

/// A stored event, waiting for its session's owner to acknowledge it: one row of `event`.
///
/// The store does not interpret `kind` or `payload`; ferryd writes the protocol's event there
/// (a kind name and its JSON). Sequence numbers grow across all sessions and are never reused.
///
/// ```swift
/// let event = try await store.appendEvent(NewEvent(
///     sessionIdentifier: "com.example.bg", taskIdentifier: 3, kind: "completed", payload: #"{"type":"completed"}"#))
/// ```
public struct EventRecord: Hashable, Sendable, Codable {
    public var sequence: Int64
    public var sessionIdentifier: String
    /// nil for an event about the session as a whole.
    public var taskIdentifier: Int?
    public var kind: String
    /// JSON text; the store refuses anything that is not valid JSON.
    public var payload: String
    public var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case sequence, kind, payload
        case sessionIdentifier = "session_identifier"
        case taskIdentifier = "task_identifier"
        case createdAt = "created_at"
    }
}

extension EventRecord: StoredRecord {
    static let databaseTableName = "event"
    static let identityColumns = ["sequence"]
}

/// An event to store: ``EventRecord`` before it has a sequence number.
public struct NewEvent: Hashable, Sendable {
    public var sessionIdentifier: String
    public var taskIdentifier: Int?
    public var kind: String
    /// JSON text.
    public var payload: String

    public init(sessionIdentifier: String, taskIdentifier: Int?, kind: String, payload: String) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.kind = kind
        self.payload = payload
    }
}
