import FerryCore
import Foundation
import GRDB
import Synchronization

/// Copies the write-ahead log into the database file off the writer's path.
///
/// SQLite checkpoints inside the commit that takes the log past 1,000 pages, on the writer's
/// connection, before that commit returns: under ferryd's load 4–9 ms about every 0.75 s
/// (`strace`: the database file's writes and its sync), added to every write queued behind it
/// and to the delivery of that commit's events. The writer's automatic checkpoints are off
/// (`wal_autocheckpoint = 0`); this runs a passive checkpoint on a connection of its own, on a
/// queue of its own, at most every ``interval`` and only after a commit. A passive checkpoint
/// never blocks a write, nor waits for one: frames a reader still needs stay for the next.
///
/// A synced commit is on disk in the log already; a commit that was not synced
/// (``Durability/written``) is synced by the next checkpoint, which starts at most
/// ``interval`` after it. Nothing checkpoints while nothing is written; the last connection to
/// close checkpoints what is left.
final class Checkpointer: Sendable {
    /// The most often a checkpoint starts: a shorter log each time (a fraction of the 1,000
    /// pages SQLite waits for), on a disk that syncs in about a millisecond.
    static let interval: Duration = .milliseconds(250)

    private let path: String
    private let queue = DispatchQueue(label: "ferry.store.checkpoint", qos: .utility)
    private struct State {
        var connection: DatabaseQueue?
        var lastStart: ContinuousClock.Instant?
        var running = false
        /// A checkpoint is set to start when the interval since the last one has passed.
        var scheduled = false
        /// A commit came while one ran or was scheduled: the next covers it.
        var due = false
        var closed = false

        /// A checkpoint starts now: it covers every commit so far.
        mutating func start(at now: ContinuousClock.Instant) {
            running = true
            lastStart = now
            due = false
        }
    }
    private let state = Mutex(State())

    init(path: String) { self.path = path }

    /// After a commit (on the writer's queue): starts a checkpoint when none runs and the last
    /// started at least ``interval`` ago, or sets one for when the interval has passed. Every
    /// commit is followed by a checkpoint within about ``interval``: a commit that was not
    /// synced (``Durability/written``) is synced by it, even when nothing is written after it.
    /// Returns at once.
    func committed() {
        let now = ContinuousClock.now
        let wait: Duration? = state.withLock { state in
            guard !state.closed else { return nil }
            guard !state.running, !state.scheduled else {
                state.due = true
                return nil
            }
            let wait = state.lastStart.map { Self.interval - (now - $0) } ?? .zero
            if wait > .zero {
                state.scheduled = true
            } else {
                state.start(at: now)
            }
            return wait
        }
        guard let wait else { return }
        if wait > .zero {
            queue.asyncAfter(deadline: .now() + wait.timeInterval) { self.startScheduled() }
        } else {
            queue.async { self.checkpoint() }
        }
    }

    /// The interval after the last start has passed: the checkpoint set for then runs.
    private func startScheduled() {
        let start = state.withLock { state in
            state.scheduled = false
            guard !state.closed, !state.running else { return false }
            state.start(at: .now)
            return true
        }
        if start { checkpoint() }
    }

    private func checkpoint() {
        do {
            try connection()?.inDatabase { db in _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)") }
        } catch {
            // The next commit tries again; until then the log only grows longer.
        }
        // Commits that came while this one ran may not be in it: one more covers them.
        let again = state.withLock { state in
            state.running = false
            return state.due
        }
        if again { committed() }
    }

    /// Its own connection, opened on first use (after the store's migrations).
    private func connection() throws -> DatabaseQueue? {
        if let open = state.withLock({ $0.closed ? nil : $0.connection }) { return open }
        var configuration = Configuration()
        configuration.label = "ferry.store.checkpoint"
        // The copied pages are synced before the log may be reused, as the writer would.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        return state.withLock { state in
            guard !state.closed else { return nil }
            state.connection = connection
            return connection
        }
    }

    /// Waits for a running checkpoint and closes the connection; later commits start none.
    func close() {
        state.withLock { $0.closed = true }
        let connection = queue.sync { state.withLock { state in defer { state.connection = nil }; return state.connection } }
        try? connection?.close()
    }
}
