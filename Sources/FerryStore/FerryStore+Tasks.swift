public import FerryCore
public import Foundation
import GRDB

extension FerryStore {
    /// Stores a new task in one transaction and returns it, on disk.
    ///
    /// When the task carries an idempotency key already used in its session, nothing is
    /// written and the task the first submission created is returned with `isNew == false`,
    /// whatever else the second submission says.
    ///
    /// - Throws: ``FerryStoreError/Code/unknownSession``; ``FerryStoreError/Code/invalidTask``
    ///   for a value the schema refuses (priority outside 0…1, an upload without a body file,
    ///   a task identifier that was not reserved or is taken). Nothing is written then.
    public func submit(_ task: NewTask, now: Date = Date()) async throws -> SubmitResult {
        let path = self.path
        return try await write("submit a task to \(task.sessionIdentifier)") { db in
            try Self.insert(task, db, now: now, path: path)
        }
    }

    /// Stores several tasks in **one** transaction (one disk sync for all: a client that
    /// sends many submissions at once is not held to one sync each), each in its own
    /// savepoint: a task the schema refuses fails alone and the others are stored. Results
    /// come in the order of `tasks`; an idempotency key used earlier in the same batch
    /// returns that task.
    public func submit(all tasks: [NewTask], now: Date = Date()) async throws -> [Result<SubmitResult, FerryStoreError>] {
        try await submitting(all: tasks, now: now).value
    }

    /// ``submit(all:now:)`` handed to the writer now, answered later: batches handed in one
    /// after the other are committed in that order, so a client's next batch can be prepared
    /// while the last is written.
    public func submitting(all tasks: [NewTask], now: Date = Date()) -> PendingWrite<[Result<SubmitResult, FerryStoreError>]> {
        let path = self.path
        return enqueueWrite("submit \(tasks.count) tasks") { db in
            var results: [Result<SubmitResult, FerryStoreError>] = []
            for task in tasks {
                var result: Result<SubmitResult, FerryStoreError>?
                try db.inSavepoint {
                    do {
                        result = .success(try Self.insert(task, db, now: now, path: path))
                        return .commit
                    } catch {
                        result = .failure(FerryStoreError.wrapping(error, path: path, while: "submit a task to \(task.sessionIdentifier)"))
                        return .rollback
                    }
                }
                results.append(result!)
            }
            return results
        }
    }

    static func insert(_ task: NewTask, _ db: Database, now: Date, path: String) throws -> SubmitResult {
        if let key = task.task.options.idempotencyKey,
            let existing = try TaskRecord.fetchOne(
                db, "WHERE session_identifier = ? AND idempotency_key = ?",
                arguments: [task.sessionIdentifier, key])
        {
            return SubmitResult(task: existing, isNew: false)
        }
        guard task.initialState == .waiting || task.initialState == .suspended else {
            throw FerryStoreError(.invalidTask, "a new task starts waiting or suspended, not \(task.initialState)", path: path)
        }
        let identifier: Int
        if let reserved = task.taskIdentifier {
            // Compiled once per connection: every submission of a reserved identifier asks.
            let last = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT last_task_identifier FROM session WHERE identifier = ?"), arguments: [task.sessionIdentifier])
            guard let last else { throw FerryStoreError.unknownSession(task.sessionIdentifier, path: path) }
            guard reserved >= 1, reserved <= last else {
                throw FerryStoreError(
                    .invalidTask, "task identifier \(reserved) was not reserved with nextTaskIdentifier(in:)", path: path)
            }
            identifier = reserved
        } else {
            identifier = try Self.reserveTaskIdentifier(db, session: task.sessionIdentifier, path: path)
        }
        let record = task.record(identifier: identifier, now: now)
        try record.insert(db)
        return SubmitResult(task: record, isNew: true)
    }

    /// The task, if the session has one with this identifier.
    public func task(session: String, task: Int) async throws -> TaskRecord? {
        try await read("read task \(task) of \(session)") { db in
            try Self.fetchTask(db, session: session, task: task)
        }
    }

    /// The session's tasks in identifier order (the order they were created): all of them,
    /// or a page of at most `limit` after the identifier `after`.
    public func tasks(in session: String, after: Int = 0, limit: Int? = nil) async throws -> [TaskRecord] {
        try await read("list the tasks of \(session)") { db in
            try TaskRecord.fetchAll(
                db,
                "WHERE session_identifier = ? AND task_identifier > ? ORDER BY task_identifier LIMIT ?",
                arguments: [session, after, limit.map { max(0, $0) } ?? -1])
        }
    }

    /// Waiting tasks of every session that may start at `now`: their begin date and next
    /// attempt time (if any) have passed. Highest priority first, then oldest first.
    /// Connection limits are not the store's business: ferryd skips what it cannot start, and
    /// reads the next page (`offset`) when all of one were held.
    public func runnableTasks(now: Date, limit: Int = 100, offset: Int = 0) async throws -> [TaskRecord] {
        try await read("list runnable tasks") { db in
            try TaskRecord.fetchAll(
                db,
                """
                    WHERE state = 'waiting' AND runnable_at <= :now
                    ORDER BY priority DESC, created_at, rowid
                    LIMIT :limit OFFSET :offset
                    """,
                arguments: ["now": now.timeIntervalSince1970, "limit": max(0, limit), "offset": max(0, offset)])
        }
    }

    /// When the next waiting task becomes runnable: `now` if one already is, nil if no task
    /// is waiting. ferryd sleeps until then (or until something new is submitted).
    public func nextRunnableDate(after now: Date) async throws -> Date? {
        let seconds = try await read("find the next runnable time") { db in
            // Cached: the scheduler asks after every task that ends.
            try Double.fetchOne(db.cachedStatement(sql: "SELECT MIN(runnable_at) FROM task WHERE state = 'waiting'"))
        }
        return seconds.map { max(now, Date(timeIntervalSince1970: $0)) }
    }

    /// When the next waiting task that is not yet runnable becomes so: nil if none waits for
    /// a time. ferryd sleeps until then while the runnable ones wait for the network.
    public func nextRunnableDate(laterThan now: Date) async throws -> Date? {
        let seconds = try await read("find the next runnable time") { db in
            try Double.fetchOne(
                db.cachedStatement(sql: "SELECT MIN(runnable_at) FROM task WHERE state = 'waiting' AND runnable_at > ?"),
                arguments: [now.timeIntervalSince1970])
        }
        return seconds.map { Date(timeIntervalSince1970: $0) }
    }

    /// Changes one task in one transaction, and stores `events` in the same transaction, so a
    /// task is never marked completed without its completion event, nor the other way round.
    ///
    /// `change` gets the task as stored and may change any field but its identity, kind and
    /// idempotency key (those are refused). `updatedAt` is set to `now`. If `change` or any
    /// write throws, nothing is written. `durability` `.written` skips the disk sync, for a
    /// change whose loss in a power cut only repeats work (a progress save).
    ///
    /// - Throws: ``FerryStoreError/Code/unknownTask``; ``FerryStoreError/Code/invalidTransition``
    ///   when the task is in a final state and `change` moves it to another;
    ///   ``FerryStoreError/Code/invalidTask`` for values the schema refuses.
    @discardableResult
    public func updateTask(
        session: String,
        task identifier: Int,
        appending events: [NewEvent] = [],
        now: Date = Date(),
        durability: Durability = .synced,
        _ change: @escaping @Sendable (inout TaskRecord) throws -> Void
    ) async throws -> TaskRecord {
        let path = self.path
        return try await write("update task \(identifier) of \(session)", durability: durability) { db in
            guard let (before, stored) = try TaskRecord.fetchOneWithValues(
                db, "WHERE session_identifier = ? AND task_identifier = ?", arguments: [session, identifier])
            else {
                throw FerryStoreError.unknownTask(identifier, session: session, path: path)
            }
            var after = before
            try change(&after)
            guard after.sessionIdentifier == before.sessionIdentifier, after.taskIdentifier == before.taskIdentifier,
                after.kind == before.kind, after.idempotencyKey == before.idempotencyKey, after.createdAt == before.createdAt
            else {
                throw FerryStoreError(.invalidTask, "a task's identity, kind, idempotency key and creation time do not change", path: path)
            }
            if before.state.isFinal && after.state != before.state {
                throw FerryStoreError.finalState(identifier, session: session, is: before.state.rawValue, cannotBecome: after.state, path: path)
            }
            after.updatedAt = now
            // A task that ended needs its credentials no more: they leave the store with it.
            if after.state.isFinal { after.credentials = [] }
            try after.update(db, changedFrom: stored)
            for event in events {
                _ = try self.insertEvent(db, event, now: now)
            }
            return after
        }
    }

    /// Sets a task's state, and its last error when one is given, in one transaction.
    @discardableResult
    public func updateState(
        session: String, task: Int, to state: TaskState,
        errorCode: String? = nil, errorMessage: String? = nil,
        appending events: [NewEvent] = [], now: Date = Date()
    ) async throws -> TaskRecord {
        try await updateTask(session: session, task: task, appending: events, now: now) { record in
            record.state = state
            if let errorCode {
                record.lastErrorCode = errorCode
                record.lastErrorMessage = errorMessage
            }
        }
    }

    /// An attempt failed and the task tries again at `retryAt` (backoff, `Retry-After`): it
    /// waits again, with the error kept for `ferry explain` and the next attempt time set.
    @discardableResult
    public func scheduleRetry(
        session: String, task: Int, errorCode: String, errorMessage: String, at retryAt: Date,
        reason: RetryWait = .backoff, now: Date = Date()
    ) async throws -> TaskRecord {
        try await updateTask(session: session, task: task, now: now) { record in
            record.state = .waiting
            record.nextAttemptAt = retryAt
            record.retryReason = reason
            record.lastErrorCode = errorCode
            record.lastErrorMessage = errorMessage
        }
    }

    /// Records how far a transfer got. Cheap enough to call every few seconds while it runs.
    public func updateProgress(
        session: String, task: Int, bytesSent: Int64, bytesReceived: Int64,
        bytesExpectedToSend: Int64?, bytesExpectedToReceive: Int64?, now: Date = Date()
    ) async throws {
        let path = self.path
        try await write("record the progress of task \(task) of \(session)", durability: .written) { db in
            try db.execute(
                sql: """
                    UPDATE task SET bytes_sent = ?, bytes_received = ?, bytes_expected_to_send = ?,
                                    bytes_expected_to_receive = ?, updated_at = ?
                    WHERE session_identifier = ? AND task_identifier = ?
                    """,
                arguments: [bytesSent, bytesReceived, bytesExpectedToSend, bytesExpectedToReceive,
                            now.timeIntervalSince1970, session, task])
            guard db.changesCount == 1 else { throw FerryStoreError.unknownTask(task, session: session, path: path) }
        }
    }

    /// After a crash or restart, tasks stored as `running` are not running: makes them
    /// `waiting` again so they are scheduled (and resumed from their resume point). Returns
    /// how many there were. Call once at start-up, before scheduling.
    @discardableResult
    public func requeueInterruptedTasks(now: Date = Date()) async throws -> Int {
        try await write("requeue interrupted tasks") { db in
            try db.execute(
                sql: "UPDATE task SET state = 'waiting', updated_at = ? WHERE state = 'running'",
                arguments: [now.timeIntervalSince1970])
            return db.changesCount
        }
    }

    /// Brings forward the next attempt of waiting tasks that back off from one of `errorCodes`
    /// (their host could not be reached) to `now`: the network came back, so waiting out the
    /// backoff would only delay them. Returns how many there were.
    @discardableResult
    public func retryNow(backingOffFrom errorCodes: [String], now: Date = Date()) async throws -> Int {
        guard !errorCodes.isEmpty else { return 0 }
        let marks = Array(repeating: "?", count: errorCodes.count).joined(separator: ", ")
        return try await write("retry tasks that could not reach their host") { db in
            try db.execute(
                sql: """
                    UPDATE task SET next_attempt_at = ?, updated_at = ?
                    WHERE state = 'waiting' AND retry_reason = 'backoff' AND next_attempt_at > ?
                      AND last_error_code IN (\(marks))
                    """,
                arguments: StatementArguments([now.timeIntervalSince1970, now.timeIntervalSince1970, now.timeIntervalSince1970] + errorCodes))
            return db.changesCount
        }
    }

    /// How many tasks are in each state, all sessions together (`ferry daemon status`).
    public func taskCounts() async throws -> [TaskState: Int] {
        try await read("count tasks") { db in
            var counts: [TaskState: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM task GROUP BY state") {
                if let state = TaskState(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            return counts
        }
    }

    /// Deletes completed, failed and cancelled tasks last changed before `date` whose events
    /// have all been acknowledged (the platform forgets finished tasks too). Their
    /// idempotency keys are forgotten with them. Returns how many went.
    @discardableResult
    public func deleteFinishedTasks(changedBefore date: Date) async throws -> Int {
        try await write("delete finished tasks") { db in
            try db.execute(
                sql: """
                    DELETE FROM task
                    WHERE state IN (\(TaskState.finalStatesSQL)) AND updated_at < ?
                      AND NOT EXISTS (SELECT 1 FROM event
                                      WHERE event.session_identifier = task.session_identifier
                                        AND event.task_identifier = task.task_identifier)
                    """,
                arguments: [date.timeIntervalSince1970])
            return db.changesCount
        }
    }

    static func fetchTask(_ db: Database, session: String, task: Int) throws -> TaskRecord? {
        try TaskRecord.fetchOne(
            db, "WHERE session_identifier = ? AND task_identifier = ?", arguments: [session, task])
    }
}
