import Foundation
import GRDB
import Synchronization
public import Logging

/// ferryd's durable state: background sessions, their tasks, and the events not yet
/// acknowledged by the app. SQLite in WAL mode through GRDB; every operation is one
/// transaction, so a change is either all on disk or not at all.
///
/// A write returns only once its transaction has committed: a task handed back by
/// ``submit(_:now:)`` survives `kill -9` and a reboot (invariant 1). Events are deleted only
/// by ``acknowledge(session:upTo:also:)`` (invariant 2). Writes whose loss would only repeat
/// work (an attempt's start, a progress save, an acknowledgement: ``Durability/written``)
/// survive `kill -9` at once and a power cut from the next synced commit or checkpoint on.
///
/// ```swift
/// let store = try FerryStore(path: dataDirectory + "/ferryd.sqlite")
/// _ = try await store.openSession("com.example.bg", appBundleIdentifier: "com.example.app")
/// let submitted = try await store.submit(NewTask(
///     sessionIdentifier: "com.example.bg", kind: .download, url: "https://example.com/big.iso"))
/// for task in try await store.runnableTasks(now: Date()) { start(task) }
/// ```
///
/// - warning: One ferryd per file. WAL lets readers in other processes (a debugging `sqlite3`)
///   look while ferryd writes, but two daemons writing the same store would each believe they
///   own its sessions.
public final class FerryStore: Sendable {
    /// The database file.
    public let path: String
    let pool: DatabasePool
    let writes: GroupCommit
    let checkpointer: Checkpointer
    let logger: Logger
    /// Set by ``close()``: later writes fail at once (SQLite's own error for a closed handle
    /// says "out of memory").
    private let isClosed = Mutex(false)

    /// Opens the store at `path`, creating the file if there is none, and migrates it to the
    /// newest schema.
    ///
    /// - Throws: ``FerryStoreError`` with ``FerryStoreError/Code/notADatabase`` when the file is
    ///   not a SQLite database (it is left untouched), ``FerryStoreError/Code/databaseTooNew``
    ///   when a newer ferryd wrote it, ``FerryStoreError/Code/cannotOpen`` when its folder is
    ///   missing or not ours.
    public init(path: String, logger: Logger = Logger(label: "ferry.store")) throws {
        self.path = path
        self.logger = logger
        try Self.refuseForeignFile(at: path)

        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(10)
        configuration.label = "ferry.store"
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw FerryStoreError.wrapping(error, path: path, while: "open the database")
        }
        checkpointer = Checkpointer(path: path)
        writes = GroupCommit(pool: pool, checkpointer: checkpointer)
        do {
            // GRDB sets NORMAL with WAL: a commit then survives the process dying but not the
            // machine losing power. A sync per commit is what "durable before acknowledged"
            // means, and grouped commits make it cheap.
            // Each grouped write runs in a savepoint, whose undo pages SQLite keeps in a
            // statement journal: a temporary file by default, which cost ten `pwrite`s per
            // enqueued task (nine in ten of ferryd's writes). In memory it is a copy.
            // Checkpoints are the `Checkpointer`'s, not the writer's commits'.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 0")
            }
        } catch {
            try? pool.close()
            throw FerryStoreError.wrapping(error, path: path, while: "set up the database")
        }
        do {
            try migrate()
        } catch {
            try? pool.close()
            throw error
        }
    }

    /// Closes the database. Later calls fail with ``FerryStoreError/Code/closed``.
    public func close() throws {
        isClosed.withLock { $0 = true }
        checkpointer.close()
        do {
            try pool.close()
        } catch {
            throw FerryStoreError.wrapping(error, path: path, while: "close the database")
        }
    }

    private func migrate() throws {
        let migrator = Schema.migrator
        do {
            let (superseded, applied) = try pool.read { db in
                (try migrator.hasBeenSuperseded(db), try migrator.appliedIdentifiers(db))
            }
            if superseded {
                throw FerryStoreError(
                    .databaseTooNew,
                    "the database was written by a newer ferryd: run that version, or move the file away to start empty",
                    path: path)
            }
            try migrator.migrate(pool)
            let now = try pool.read { db in try migrator.appliedIdentifiers(db) }
            let new = now.subtracting(applied)
            if !new.isEmpty {
                logger.info("store migrated", metadata: ["path": "\(path)", "migrations": "\(new.sorted())"])
            }
        } catch let error as FerryStoreError {
            throw error
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB || error.resultCode == .SQLITE_CORRUPT {
            throw FerryStoreError.notADatabase(path: path, underlying: error)
        } catch {
            throw FerryStoreError(
                .migrationFailed, "could not bring the database to the current schema; it stays as it was",
                path: path, underlying: error)
        }
    }

    /// A file that exists, is not empty and does not start with SQLite's header is someone
    /// else's: refuse it before SQLite gets a chance to write to it.
    private static func refuseForeignFile(at path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }  // absent (or unreadable: SQLite will say)
        defer { try? handle.close() }
        let header: Data
        do {
            header = try handle.read(upToCount: 16) ?? Data()
        } catch {
            throw FerryStoreError(.cannotOpen, "cannot read the database file: check its permissions", path: path, underlying: error)
        }
        if !header.isEmpty && header != Data("SQLite format 3\0".utf8) {
            throw FerryStoreError.notADatabase(path: path)
        }
    }

    // MARK: Transactions

    /// Runs `body` as one write, all or nothing: in a savepoint of the next group of writes
    /// (``GroupCommit``), answered once that group committed. Any error rolls `body`'s changes
    /// back and comes out as a ``FerryStoreError``. `durability` says whether the commit is
    /// synced to disk before `write` returns (the default) or only handed to the system.
    func write<T: Sendable>(
        _ doing: String, durability: Durability = .synced, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        try await enqueueWrite(doing, durability: durability, body).value
    }

    /// Hands `body` to the writer and returns at once (writes commit in the order handed in).
    func enqueueWrite<T: Sendable>(
        _ doing: String, durability: Durability = .synced, _ body: @escaping @Sendable (Database) throws -> T
    ) -> PendingWrite<T> {
        let path = self.path
        if isClosed.withLock({ $0 }) {
            let refused = PendingWrite<T>(failure: { $0 })
            refused.complete(.failure(FerryStoreError(.closed, "could not \(doing): the store is closed", path: path)))
            return refused
        }
        return writes.enqueue(body, durability: durability, failure: { FerryStoreError.wrapping($0, path: path, while: doing) })
    }

    func read<T: Sendable>(_ doing: String, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw FerryStoreError.wrapping(error, path: path, while: doing)
        }
    }
}
