public import FerryCore
public import Foundation
import GRDB

extension FerryStore {
    /// The session with this identifier, created if there is none. `created` says which.
    ///
    /// An existing session is returned as it is: whether the caller may use it (same app,
    /// same group) is ferryd's decision. `keepsEvents` false makes a new session one whose
    /// events ferryd acknowledges itself while nobody owns it.
    public func openSession(
        _ identifier: String,
        appBundleIdentifier: String,
        sharedContainerIdentifier: String? = nil,
        keepsEvents: Bool = true,
        now: Date = Date()
    ) async throws -> (session: SessionRecord, created: Bool) {
        try await write("open session \(identifier)") { db in
            if let existing = try SessionRecord.fetchOne(db, "WHERE identifier = ?", arguments: [identifier]) {
                return (existing, false)
            }
            let session = SessionRecord(
                identifier: identifier, appBundleIdentifier: appBundleIdentifier,
                sharedContainerIdentifier: sharedContainerIdentifier, keepsEvents: keepsEvents, createdAt: now)
            try session.insert(db)
            return (session, true)
        }
    }

    /// The session with this identifier, if there is one.
    public func session(_ identifier: String) async throws -> SessionRecord? {
        try await read("read session \(identifier)") { db in
            try SessionRecord.fetchOne(db, "WHERE identifier = ?", arguments: [identifier])
        }
    }

    /// Every session, oldest first.
    public func sessions() async throws -> [SessionRecord] {
        try await read("list sessions") { db in
            try SessionRecord.fetchAll(db, "ORDER BY created_at, identifier")
        }
    }

    /// Deletes a session with its tasks and events. Returns false if there was none.
    public func deleteSession(_ identifier: String) async throws -> Bool {
        try await write("delete session \(identifier)") { db in
            try db.execute(sql: "DELETE FROM session WHERE identifier = ?", arguments: [identifier])
            return db.changesCount > 0
        }
    }

    /// Sets what an owner's attach says of the session (each only when given): its
    /// `httpMaximumConnectionsPerHost` (1…64), what it allows of the network, how its
    /// transfers are made and whether its app is started for its events; one write. Returns
    /// the session.
    ///
    /// - Throws: ``FerryStoreError/Code/unknownSession``; ``FerryStoreError/Code/constraintViolation``
    ///   for a connection limit outside 1…64.
    @discardableResult
    public func configure(
        session identifier: String, maximumConnectionsPerHost: Int? = nil, networkAccess: NetworkAccess? = nil,
        transferOptions: SessionTransferOptions? = nil, sendsLaunchEvents: Bool? = nil
    ) async throws -> SessionRecord {
        let path = self.path
        let access = try JSONColumn.value(networkAccess)
        let options = try JSONColumn.value(transferOptions)
        return try await write("configure session \(identifier)") { db in
            try db.execute(
                sql: """
                    UPDATE session SET maximum_connections_per_host = coalesce(?, maximum_connections_per_host),
                        network_access = coalesce(?, network_access), transfer_options = coalesce(?, transfer_options),
                        sends_launch_events = coalesce(?, sends_launch_events)
                    WHERE identifier = ?
                    """,
                arguments: [maximumConnectionsPerHost, access, options, sendsLaunchEvents, identifier])
            guard let session = try SessionRecord.fetchOne(db, "WHERE identifier = ?", arguments: [identifier])
            else { throw FerryStoreError.unknownSession(identifier, path: path) }
            return session
        }
    }

    /// Every session with how many tasks it has and how many events wait for it, for
    /// `listSessions`, in one read.
    public func sessionSummaries() async throws -> [SessionSummary] {
        try await read("summarise sessions") { db in
            let sessions = try SessionRecord.fetchAll(db, "ORDER BY created_at, identifier")
            var tasks: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT session_identifier AS s, COUNT(*) AS n FROM task GROUP BY s") {
                tasks[row["s"]] = row["n"]
            }
            var events: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT session_identifier AS s, COUNT(*) AS n FROM event GROUP BY s") {
                events[row["s"]] = row["n"]
            }
            return sessions.map {
                SessionSummary(session: $0, taskCount: tasks[$0.identifier] ?? 0, undeliveredEventCount: events[$0.identifier] ?? 0)
            }
        }
    }

    /// How many sessions there are and how many events wait, all sessions together, without
    /// reading each session (`ferry daemon status` and every metrics scrape: sessions are
    /// never deleted, so ferryd has as many as were ever made).
    public func sessionCounts() async throws -> (sessions: Int, undeliveredEvents: Int) {
        try await read("count sessions") { db in
            let row = try Row.fetchOne(db, sql: "SELECT (SELECT COUNT(*) FROM session) AS sessions, (SELECT COUNT(*) FROM event) AS events")
            return (row?["sessions"] ?? 0, row?["events"] ?? 0)
        }
    }

    /// Reserves the session's next task identifier (1, 2, 3…); identifiers are never reused,
    /// even after their task is deleted. Pass it in ``NewTask/taskIdentifier`` to submit later.
    ///
    /// - Throws: ``FerryStoreError/Code/unknownSession``.
    public func nextTaskIdentifier(in session: String, count: Int = 1) async throws -> Int {
        try await write("reserve a task identifier in \(session)") { db in
            try Self.reserveTaskIdentifier(db, session: session, count: count, path: self.path)
        }
    }

    /// The first of `count` identifiers reserved in a row.
    static func reserveTaskIdentifier(_ db: Database, session: String, count: Int = 1, path: String) throws -> Int {
        // Once per submission: one statement, compiled once per connection.
        let statement = try db.cachedStatement(
            sql: "UPDATE session SET last_task_identifier = last_task_identifier + ? WHERE identifier = ? RETURNING last_task_identifier")
        guard let last = try Int.fetchOne(statement, arguments: [max(1, count), session]) else {
            throw FerryStoreError.unknownSession(session, path: path)
        }
        return last - max(1, count) + 1
    }
}

extension FerryStoreError {
    static func unknownSession(_ session: String, path: String) -> FerryStoreError {
        FerryStoreError(.unknownSession, "no session \"\(session)\": open it first", path: path)
    }

    static func unknownTask(_ task: Int, session: String, path: String) -> FerryStoreError {
        FerryStoreError(.unknownTask, "session \"\(session)\" has no task \(task)", path: path)
    }

    /// A task that ended (`state`, as stored) cannot become `next`.
    static func finalState(_ task: Int, session: String, is state: String, cannotBecome next: TaskState, path: String) -> FerryStoreError {
        FerryStoreError(.invalidTransition, "task \(task) of \"\(session)\" is \(state) and cannot become \(next): submit a new task", path: path)
    }
}

/// A session and its counts, from ``FerryStore/sessionSummaries()``.
public struct SessionSummary: Hashable, Sendable {
    public var session: SessionRecord
    public var taskCount: Int
    public var undeliveredEventCount: Int
}
