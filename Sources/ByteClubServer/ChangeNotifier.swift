import Foundation
import Synchronization

/// Wakes `longpoll_delta` waiters when a change to their namespace commits in this process,
/// and bounds how many may wait at once. Changes committed by another process sharing the
/// database (a second server, later on PostgreSQL) are found by the waiters' own re-check of
/// the journal every ``ByteClubConfiguration/longPollRecheckInterval``.
final class ChangeNotifier: Sendable {
    private struct Waiter {
        let namespace: Int64
        let wake: AsyncStream<Void>.Continuation
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())
    /// Waiters allowed at once; past it ``wait(namespace:timeout:recheck:isGone:hasChanged:)`` throws.
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Waiters now (for logs and tests).
    var count: Int { state.withLock { $0.waiters.count } }

    /// A write to `namespace` committed: every waiter of it checks the journal at once.
    func notify(namespace: Int64) {
        let wakes = state.withLock { state in state.waiters.values.filter { $0.namespace == namespace }.map(\.wake) }
        for wake in wakes { wake.yield() }
    }

    /// The server is shutting down: waiters answer now (with what the journal says), and no new
    /// one waits.
    func close() {
        let wakes = state.withLock { state in
            state.closed = true
            return state.waiters.values.map(\.wake)
        }
        for wake in wakes { wake.finish() }
    }

    /// Waits until `hasChanged` holds (checked at once, on every notification for `namespace`,
    /// and every `recheck`), `timeout` passes, `isGone` says the client left, or the server
    /// shuts down. Returns the last answer of `hasChanged`, or `false` when the client left.
    /// Throws ``APIError`` 503 with `Retry-After` when ``capacity`` waiters are already waiting.
    func wait(namespace: Int64, timeout: Duration, recheck: Duration, isGone: @escaping @Sendable () -> Bool,
              hasChanged: @escaping @Sendable () async throws -> Bool) async throws -> Bool {
        let (stream, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id: UInt64? = try state.withLock { state in
            if state.closed { return nil }
            guard state.waiters.count < capacity else {
                throw APIError(.serviceUnavailable, "Too many clients are waiting for changes: retry later",
                               headers: [.retryAfter: "10"])
            }
            state.nextID += 1
            state.waiters[state.nextID] = Waiter(namespace: namespace, wake: wake)
            return state.nextID
        }
        guard let id else { return try await hasChanged() }
        // Registered before the first check: a change committed in between wakes us, not lost.
        defer { _ = state.withLock { $0.waiters.removeValue(forKey: id) } }
        if try await hasChanged() { return true }
        let deadline = ContinuousClock.now + timeout
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // The ticker: a re-check every `recheck` (changes from other processes, a client
            // gone), and the end of the stream at the deadline.
            group.addTask {
                while ContinuousClock.now < deadline {
                    try? await Task.sleep(until: min(ContinuousClock.now + recheck, deadline))
                    if Task.isCancelled { break }
                    wake.yield()
                }
                wake.finish()
            }
            defer { group.cancelAll() }
            for await _ in stream {
                if isGone() { return false }
                if try await hasChanged() { return true }
                if ContinuousClock.now >= deadline { break }
            }
            return try await hasChanged()
        }
    }
}
