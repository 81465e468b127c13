import FerryCore
public import Foundation
import GRDB

/// What a successful transfer leaves on its task: the server's status, the bytes moved, and
/// where ferryd delivered a download (its `deliverTo`, or nil).
public struct TaskCompletion: Hashable, Sendable {
    public var responseStatus: Int
    public var bytesSent: Int64
    public var bytesReceived: Int64
    public var deliveredTo: String?

    public init(responseStatus: Int, bytesSent: Int64, bytesReceived: Int64, deliveredTo: String? = nil) {
        self.responseStatus = responseStatus
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.deliveredTo = deliveredTo
    }
}

extension FerryStore {
    /// Marks a waiting task `running` for its next attempt (one more attempt counted, its
    /// retry time and reason cleared) and returns it; nil when it is not waiting any more
    /// (suspended, cancelled or ended meanwhile). The same change as
    /// ``updateTask(session:task:appending:now:durability:_:)`` making those changes, in one statement: each
    /// attempt's start read the row, decoded it, and wrote the columns that changed.
    ///
    /// ```swift
    /// guard let running = try await store.startAttempt(session: "com.example.bg", task: 3) else { return }
    /// ```
    ///
    /// - Throws: ``FerryStoreError/Code/unknownTask``.
    public func startAttempt(session: String, task identifier: Int, now: Date = Date()) async throws -> TaskRecord? {
        let path = self.path
        // Not synced: after a power cut the task is `waiting` again, as its transfer is.
        return try await write("start an attempt of task \(identifier) of \(session)", durability: .written) { db in
            let statement = try db.cachedStatement(sql: Self.startAttemptSQL)
            if let row = try Row.fetchOne(statement, arguments: [now.timeIntervalSince1970, session, identifier]) {
                return try TaskRecord.read(row)
            }
            guard try Self.fetchTask(db, session: session, task: identifier) != nil else {
                throw FerryStoreError.unknownTask(identifier, session: session, path: path)
            }
            return nil
        }
    }

    static let startAttemptSQL = """
        UPDATE task SET state = 'running', attempt_count = attempt_count + 1, next_attempt_at = NULL,
            retry_reason = NULL, updated_at = ?
        WHERE session_identifier = ? AND task_identifier = ? AND state = 'waiting'
        RETURNING \(TaskRecord.table.selection)
        """

    /// Marks a task `completed` with its outcome and stores its events, in one write. The same
    /// change as ``updateTask(session:task:appending:now:durability:_:)`` setting those fields, in one
    /// statement that reads no row and returns none: a thousand transfers ending together are
    /// a thousand of these in a few grouped transactions, and each one's time is the others'
    /// wait. (A spooled upload body is the caller's to delete: its path is the task's
    /// `bodyFile`, which nothing changes after the submission.)
    ///
    /// ```swift
    /// try await store.completeTask(
    ///     session: "com.example.bg", task: 3, TaskCompletion(responseStatus: 200, bytesSent: 0, bytesReceived: 2048),
    ///     appending: [responseEvent, completedEvent])
    /// ```
    ///
    /// - Throws: ``FerryStoreError/Code/unknownTask``; ``FerryStoreError/Code/invalidTransition``
    ///   when the task already ended (completed, failed or cancelled).
    public func completeTask(
        session: String, task identifier: Int, _ completion: TaskCompletion, appending events: [NewEvent] = [], now: Date = Date()
    ) async throws {
        let path = self.path
        try await write("complete task \(identifier) of \(session)") { db in
            try db.cachedStatement(sql: Self.completeTaskSQL).execute(arguments: [
                completion.deliveredTo, completion.responseStatus, completion.bytesSent, completion.bytesReceived,
                completion.bytesSent, completion.bytesSent, completion.bytesReceived, now.timeIntervalSince1970, session, identifier,
            ])
            guard db.changesCount == 1 else {
                throw Self.refusedChange(db, session: session, task: identifier, to: .completed, path: path)
            }
            for event in events { _ = try self.insertEvent(db, event, now: now) }
        }
    }

    /// As `updateTask`'s rules: the upload's resource and the last error go, the credentials
    /// leave the store with the task, and a byte count to send is kept when nothing was sent
    /// (a download's). A task that ended is not changed. No `RETURNING`: SQLite collects
    /// returned rows in a temporary table, a cost for each completion.
    static let completeTaskSQL = """
        UPDATE task SET state = 'completed', delivered_to = ?, response_status = ?, bytes_sent = ?,
            bytes_received = ?, bytes_expected_to_send = CASE WHEN ? > 0 THEN ? ELSE bytes_expected_to_send END,
            bytes_expected_to_receive = ?, last_error_code = NULL, last_error_message = NULL,
            upload_resource_url = NULL, upload_interop_version = NULL, credentials = NULL, updated_at = ?
        WHERE session_identifier = ? AND task_identifier = ? AND \(TaskState.notEndedSQL)
        """

    /// Why a change to `state` touched no row: the task is unknown, or it already ended.
    static func refusedChange(_ db: Database, session: String, task identifier: Int, to state: TaskState, path: String) -> FerryStoreError {
        let stored = try? String.fetchOne(
            db, sql: "SELECT state FROM task WHERE session_identifier = ? AND task_identifier = ?", arguments: [session, identifier])
        guard let stored else { return FerryStoreError.unknownTask(identifier, session: session, path: path) }
        return FerryStoreError.finalState(identifier, session: session, is: stored, cannotBecome: state, path: path)
    }
}
