public import Foundation
import GRDB

extension FerryStore {
    /// Stores an event and returns it with its sequence number.
    ///
    /// - Throws: ``FerryStoreError/Code/constraintViolation`` for an unknown session or task,
    ///   or a payload that is not JSON.
    @discardableResult
    public func appendEvent(_ event: NewEvent, now: Date = Date()) async throws -> EventRecord {
        try await write("store an event for \(event.sessionIdentifier)") { db in
            try self.insertEvent(db, event, now: now)
        }
    }

    /// Hands every committed transaction's events, in sequence order and once they are on disk,
    /// to `body` (one observer; nil stops it). Called on the writer's queue before the writes'
    /// callers hear back: `body` must return quickly. An event rolled back is never handed over.
    ///
    /// ```swift
    /// store.observeCommittedEvents { committed in
    ///     for event in committed.events { outbox.add(event, committedAt: committed.committedAt) }
    /// }
    /// ```
    public func observeCommittedEvents(_ body: (@Sendable (CommittedEvents) -> Void)?) {
        writes.observeCommittedEvents(body)
    }

    /// The session's events with a sequence above `after`, oldest first, at most `limit`.
    public func undeliveredEvents(in session: String, after sequence: Int64 = 0, limit: Int = 500) async throws -> [EventRecord] {
        try await read("read the events of \(session)") { db in
            try EventRecord.fetchAll(
                db,
                "WHERE session_identifier = ? AND sequence > ? ORDER BY sequence LIMIT ?",
                arguments: [session, sequence, max(0, limit)])
        }
    }

    /// The sequence of the session's last stored event; nil when none waits.
    public func lastEventSequence(in session: String) async throws -> Int64? {
        try await read("find the last event of \(session)") { db in
            try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM event WHERE session_identifier = ?", arguments: [session])
        }
    }

    /// Which of the session's tasks numbered `first…last` still have events not acknowledged.
    public func tasksWithEvents(in session: String, from first: Int, through last: Int) async throws -> Set<Int> {
        try await read("find the tasks of \(session) with events") { db in
            Set(try Int.fetchAll(
                db.cachedStatement(sql: """
                    SELECT DISTINCT task_identifier FROM event
                    WHERE session_identifier = ? AND task_identifier BETWEEN ? AND ?
                    """),
                arguments: [session, first, last]))
        }
    }

    /// Deletes the session's events up to and including `sequence`, and the later ones listed in
    /// `single`, once the client has handled them; other sessions' events and the rest stay.
    /// Returns how many went.
    @discardableResult
    public func acknowledge(session: String, upTo sequence: Int64, also single: [Int64] = []) async throws -> Int {
        try await acknowledging(session: session, upTo: sequence, also: single).removed
    }

    /// What ``acknowledging(session:upTo:also:returning:)`` did.
    public struct Acknowledged: Sendable {
        /// How many events went.
        public var removed: Int
        /// The removed events of the kind asked for, oldest first.
        public var removedOfKind: [EventRecord]
        /// Whether the session still has events.
        public var eventsLeft: Bool
    }

    /// ``acknowledge(session:upTo:also:)``, which also hands back the removed events of one
    /// kind (their payloads name what the caller releases with them: ferryd's downloaded
    /// files) and says whether any event is left, in the same write: ferryd's acknowledgement
    /// was three reads and this write, for every task an app handled.
    ///
    /// ```swift
    /// let done = try await store.acknowledging(session: "com.example.bg", upTo: 41, returning: "downloadFinished")
    /// for event in done.removedOfKind { release(event) }
    /// ```
    public func acknowledging(
        session: String, upTo sequence: Int64, also single: [Int64] = [], returning kind: String? = nil
    ) async throws -> Acknowledged {
        // Not synced: lost with a power cut, the events are delivered again (as after any crash
        // before an acknowledgement), their downloaded files possibly gone.
        try await write("acknowledge the events of \(session)", durability: .written) { db in
            var ofKind: [EventRecord] = []
            if let kind {
                let singles = Set(single)
                ofKind = try EventRecord.fetchAll(
                    db, "WHERE session_identifier = ? AND sequence <= ? AND kind = ? ORDER BY sequence",
                    arguments: [session, max(sequence, single.max() ?? 0), kind]
                ).filter { $0.sequence <= sequence || singles.contains($0.sequence) }
            }
            // Compiled once per connection: an app acknowledges after every task that ends.
            try db.cachedStatement(sql: "DELETE FROM event WHERE session_identifier = ? AND sequence <= ?").execute(arguments: [session, sequence])
            var removed = db.changesCount
            // In slices: SQLite caps the number of bound parameters in one statement.
            for start in stride(from: 0, to: single.count, by: 500) {
                let slice = Array(single[start..<min(start + 500, single.count)])
                let marks = Array(repeating: "?", count: slice.count).joined(separator: ",")
                try db.execute(
                    sql: "DELETE FROM event WHERE session_identifier = ? AND sequence IN (\(marks))",
                    arguments: StatementArguments([session] as [any DatabaseValueConvertible] + slice.map { $0 as any DatabaseValueConvertible }))
                removed += db.changesCount
            }
            let left = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM event WHERE session_identifier = ?)"), arguments: [session]) ?? false
            return Acknowledged(removed: removed, removedOfKind: ofKind, eventsLeft: left)
        }
    }

    /// Sessions that have events waiting: the ones whose app ferryd launches when no process
    /// owns them.
    public func sessionsWithUndeliveredEvents() async throws -> [String] {
        try await read("list sessions with events") { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT session_identifier FROM event ORDER BY session_identifier")
        }
    }

    /// Inserts an event in the running write, journaled for ``observeCommittedEvents(_:)``.
    func insertEvent(_ db: Database, _ event: NewEvent, now: Date) throws -> EventRecord {
        try db.cachedStatement(sql: """
                INSERT INTO event (session_identifier, task_identifier, kind, payload, created_at)
                VALUES (?, ?, ?, ?, ?)
                """)
            .execute(arguments: [event.sessionIdentifier, event.taskIdentifier, event.kind, event.payload, now.timeIntervalSince1970])
        let record = EventRecord(
            sequence: db.lastInsertedRowID, sessionIdentifier: event.sessionIdentifier, taskIdentifier: event.taskIdentifier,
            kind: event.kind, payload: event.payload, createdAt: now)
        writes.journal(record)
        return record
    }
}
