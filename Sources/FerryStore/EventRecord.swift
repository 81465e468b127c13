public import Foundation
import GRDB

/// A stored event, waiting for its session's owner to acknowledge it: one row of `event`.
///
/// The store does not interpret `kind` or `payload`; ferryd writes the protocol's event there
/// (a kind name and its JSON). Sequence numbers grow across all sessions and are never reused.
///
/// ```swift
/// let event = try await store.appendEvent(NewEvent(
///     sessionIdentifier: "com.example.bg", taskIdentifier: 3, kind: "completed", payload: #"{"type":"completed"}"#))
/// ```
public struct EventRecord: Hashable, Sendable {
    public var sequence: Int64
    public var sessionIdentifier: String
    /// nil for an event about the session as a whole.
    public var taskIdentifier: Int?
    public var kind: String
    /// JSON text; the store refuses anything that is not valid JSON.
    public var payload: String
    public var createdAt: Date
}

extension EventRecord: StoredRecord {
    static let table = StoredTable(
        "event", columns: ["sequence", "session_identifier", "task_identifier", "kind", "payload", "created_at"],
        identity: ["sequence"])

    init(row: inout RowReader) throws {
        sequence = try row.value()
        sessionIdentifier = try row.value()
        taskIdentifier = try row.optional()
        kind = try row.value()
        payload = try row.value()
        createdAt = try row.date()
    }

    func columnValues() throws -> [DatabaseValue] {
        [
            sequence.databaseValue, sessionIdentifier.databaseValue, taskIdentifier.storedValue, kind.databaseValue,
            payload.databaseValue, createdAt.storedValue,
        ]
    }
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

/// The events one transaction stored, in sequence order, and when it committed: what
/// ``FerryStore/observeCommittedEvents(_:)`` hands over.
public struct CommittedEvents: Sendable {
    public var events: [EventRecord]
    /// When the commit that made them durable returned (after its disk sync).
    public var committedAt: Date
}
