import FerryCore
import Foundation
import GRDB
import Synchronization

/// The store's writes, committed in groups: writes that arrive while one transaction is being
/// written share the next one (one commit, one disk sync for all of them), with no timer. Each
/// write still runs in a savepoint of its own, so one that throws is rolled back alone, and
/// each caller hears back only once the commit that holds its change is on disk.
///
/// A thousand transfers finishing together are a thousand updates with their events; one
/// transaction each queued them behind a thousand disk syncs.
///
/// A transaction is synced to disk before its writes hear back when one of them asks for it
/// (``Durability/synced``, the default); a group of writes that only record what a crash of
/// the machine could take back (``Durability/written``) commits without the sync.
///
/// The events a transaction inserted (``journal(_:)``) are handed to the observer set with
/// ``observeCommittedEvents(_:)`` once it committed, in sequence order, with the moment of the
/// commit: ferryd delivers them from memory instead of reading them back.
final class GroupCommit: Sendable {
    private let pool: DatabasePool
    /// Told of each commit: checkpoints run beside the writer, not in its commits.
    private let checkpointer: Checkpointer
    /// The events inserted by the transaction being written (by writes not rolled back).
    private let journaled = Mutex<[EventRecord]>([])
    private let observer = SharedCallback<CommittedEvents>()
    private struct State {
        var waiting: [any QueuedWrite] = []
        /// A transaction is being written (and will look for more when it ends).
        var writing = false
        /// What the writer's connection is set to: `synchronous` may not change inside a
        /// transaction, so it is set before each one that needs the other.
        var connectionDurability = Durability.synced
    }
    private let state = Mutex(State())

    init(pool: DatabasePool, checkpointer: Checkpointer) {
        self.pool = pool
        self.checkpointer = checkpointer
    }

    /// Sets who hears of each committed transaction's events (one observer; nil stops it).
    /// Called on the writer's queue, before the writes' callers are answered: keep it short.
    func observeCommittedEvents(_ body: (@Sendable (CommittedEvents) -> Void)?) {
        observer.set(body)
    }

    /// An event the running write inserted: reported with its transaction's commit, or dropped
    /// when the write is rolled back.
    func journal(_ event: EventRecord) {
        journaled.withLock { $0.append(event) }
    }

    /// Hands `body` to the writer now and returns at once; writes are committed in the order
    /// they were handed in, and `value` of the result waits for `body`'s commit.
    /// `failure` turns an error into the one its caller gets.
    func enqueue<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> T, durability: Durability,
        failure: @escaping @Sendable (any Error) -> any Error
    ) -> PendingWrite<T> {
        let outcome = PendingWrite<T>(failure: failure)
        enqueue(Write(body: body, durability: durability, outcome: outcome))
        return outcome
    }

    private func enqueue(_ write: any QueuedWrite) {
        let start = state.withLock { state in
            state.waiting.append(write)
            defer { state.writing = true }
            return !state.writing
        }
        if start { writeNext() }
    }

    /// One transaction with everything that waits when the writer gets to it; then the next,
    /// until nothing waits.
    private func writeNext() {
        pool.asyncWriteWithoutTransaction { db in
            let group = self.state.withLock { state in
                defer { state.waiting = [] }
                return state.waiting
            }
            let result: Result<Void, any Error>
            do {
                try self.setDurability(group.contains { $0.durability == .synced } ? .synced : .written, db)
                try db.inTransaction {
                    for write in group {
                        let mark = self.journaled.withLock { $0.count }
                        if !write.run(db) {
                            self.journaled.withLock { $0.removeSubrange(mark...) }
                        }
                    }
                    return .commit
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            self.finish(group, result)
        }
    }

    /// What the last transaction ran with.
    var currentDurability: Durability { state.withLock { $0.connectionDurability } }

    /// Sets the writer's `synchronous` for the next transaction, when it differs: `FULL` syncs
    /// the log at each commit; `NORMAL` leaves the commit to the operating system (it survives
    /// ferryd's crash, not the machine's), and the next synced commit or checkpoint syncs it.
    private func setDurability(_ wanted: Durability, _ db: Database) throws {
        guard state.withLock({ $0.connectionDurability }) != wanted else { return }
        try db.cachedStatement(sql: wanted == .synced ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL").execute()
        state.withLock { $0.connectionDurability = wanted }
    }

    /// Answers the group's writes once their transaction ended, hands its events over, and
    /// starts the next transaction when writes wait.
    private func finish(_ group: [any QueuedWrite], _ result: Result<Void, any Error>) {
        let events = journaled.withLock { journaled in
            defer { journaled = [] }
            return journaled
        }
        // A failed commit wrote none of the group (a transaction that could not begin, the
        // database busy past its time-out or closed, fails its group, not the writes after).
        let commitError: (any Error)? = if case .failure(let error) = result { error } else { nil }
        if commitError == nil { checkpointer.committed() }
        if commitError == nil, !events.isEmpty {
            observer.call(CommittedEvents(events: events, committedAt: Date()))
        }
        for write in group { write.finish(commitError: commitError) }
        let more = state.withLock { state in
            if state.waiting.isEmpty { state.writing = false }
            return state.writing
        }
        if more { writeNext() }
    }
}

/// How far a write has gone when its caller hears back.
public enum Durability: Sendable {
    /// Synced to disk: it survives a power cut (submissions, completions, every state a client
    /// is told of).
    case synced
    /// Handed to the operating system: it survives ferryd's crash but not the machine's, until
    /// the next synced commit or checkpoint (under a second while ferryd works). For writes
    /// whose loss only repeats work: an attempt's start, a progress save, an acknowledgement.
    case written
}

/// A write waiting for its group's transaction.
private protocol QueuedWrite: Sendable {
    var durability: Durability { get }
    /// Runs the write in a savepoint, inside the group's transaction; false when it threw (and
    /// its savepoint was rolled back).
    func run(_ db: Database) -> Bool
    /// Answers the caller once the transaction ended: its own result, or the commit's error.
    func finish(commitError: (any Error)?)
}

private final class Write<T: Sendable>: QueuedWrite, @unchecked Sendable {
    private let body: @Sendable (Database) throws -> T
    let durability: Durability
    private let outcome: PendingWrite<T>
    // Unchecked: set by `run` and read by `finish`, both on the writer's queue, one after the other.
    private var result: Result<T, any Error>?

    init(body: @escaping @Sendable (Database) throws -> T, durability: Durability, outcome: PendingWrite<T>) {
        self.body = body
        self.durability = durability
        self.outcome = outcome
    }

    func run(_ db: Database) -> Bool {
        // The savepoint's statements compiled once per connection: GRDB's `inSavepoint`
        // compiles both each time, which cost more than a completion's own statements.
        do {
            try db.cachedStatement(sql: "SAVEPOINT ferry_write").execute()
            let value = try body(db)
            try db.cachedStatement(sql: "RELEASE SAVEPOINT ferry_write").execute()
            result = .success(value)
            return true
        } catch {
            result = .failure(error)
            // This write alone is undone. When SQLite rolled the whole transaction back (a full
            // disk), there is no savepoint left, and the group fails at its commit.
            try? db.execute(sql: "ROLLBACK TO SAVEPOINT ferry_write")
            try? db.execute(sql: "RELEASE SAVEPOINT ferry_write")
            return false
        }
    }

    func finish(commitError: (any Error)?) {
        outcome.complete(commitError.map { .failure($0) } ?? result ?? .failure(CancellationError()))
    }
}

/// A write handed to the store and not yet answered: ``value`` waits until it is committed
/// (or failed). For one waiter.
public final class PendingWrite<T: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<T, any Error>?)
        case done(Result<T, any Error>)
    }
    private let state = Mutex(State.waiting(nil))
    private let failure: @Sendable (any Error) -> any Error

    init(failure: @escaping @Sendable (any Error) -> any Error) { self.failure = failure }

    func complete(_ outcome: Result<T, any Error>) {
        let result = outcome.mapError(failure)
        let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard case .waiting(let waiter) = state else { return nil }
            state = .done(result)
            return waiter
        }
        waiter?.resume(with: result)
    }

    /// The write's result, once its transaction committed.
    public var value: T {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let done = state.withLock { state -> Result<T, any Error>? in
                    switch state {
                    case .done(let result): return result
                    case .waiting: state = .waiting(continuation); return nil
                    }
                }
                if let done { continuation.resume(with: done) }
            }
        }
    }
}
