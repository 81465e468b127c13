import FerryCore
import NIOConcurrencyHelpers
import NIOCore

/// Caps how many requests run at once against one host (`httpMaximumConnectionsPerHost`).
///
/// AsyncHTTPClient's per-host limit is a *soft* limit; this one is hard: a request waits
/// here, in arrival order, until a slot is free. With at most N requests in flight the
/// pool never needs more than N connections to the host.
///
/// A lock rather than an actor: taking a free slot (the usual case) does not suspend, so a
/// request costs no executor hop on the way in or out (an actor took two; a thousand 16 KiB
/// downloads did not get measurably faster without them, 0.16–0.17 s either way).
final class HostLimiter: Sendable {
    /// A request waiting for a slot: a suspended task's continuation, or the closure that
    /// starts a transfer that has no task yet (``enqueue(host:_:)``).
    private struct Waiter {
        let resume: @Sendable (Result<Void, any Error>) -> Void
    }

    /// One host's waiters in arrival order. One that leaves (cancelled, withdrawn) leaves its
    /// number in the order, skipped when reached, so leaving costs the same however long the
    /// line: a session cancelling 16,000 queued tasks searched the line for each.
    private struct WaitingLine {
        private var order = CircularBuffer<UInt64>()
        private var waiting: [UInt64: Waiter] = [:]

        var count: Int { waiting.count }
        var isEmpty: Bool { waiting.isEmpty }

        mutating func append(_ id: UInt64, _ waiter: Waiter) {
            order.append(id)
            waiting[id] = waiter
        }

        /// The first waiter still in line, taken out.
        mutating func popFirst() -> Waiter? {
            while let id = order.popFirst() {
                if let waiter = waiting.removeValue(forKey: id) { return waiter }
            }
            return nil
        }

        /// Waiter `id`, taken out, if it is still in line.
        mutating func remove(_ id: UInt64) -> Waiter? {
            waiting.removeValue(forKey: id)
        }
    }

    private struct State {
        var active: [String: Int] = [:]
        /// In arrival order; taken from the front in place (an array copied out of the
        /// dictionary and shifted made each release cost as much as the queue was long: a
        /// session given 1,000 tasks at once spent more on that than on its 16 KiB downloads).
        var waiters: [String: WaitingLine] = [:]
        var nextID: UInt64 = 0
        /// Waiters between "no slot" and their continuation being queued.
        var registering: Set<UInt64> = []
        /// Of those, the ones cancelled in that moment.
        var cancelledWhileRegistering: Set<UInt64> = []

        /// Takes a slot of `host` if one is free under `limit`.
        mutating func takeSlot(of host: String, limit: Int) -> Bool {
            guard active[host, default: 0] < limit else { return false }
            active[host, default: 0] += 1
            return true
        }

        /// Takes waiter `id` out of `host`'s line, if it is there; a line left empty goes.
        mutating func leave(_ host: String, _ id: UInt64) -> Waiter? {
            let waiter = waiters[host]?.remove(id)
            if waiters[host]?.isEmpty == true { waiters[host] = nil }
            return waiter
        }
    }

    private let limit: Int
    private let state = NIOLockedValueBox(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `body` holding one of `host`'s slots.
    func withSlot<T: Sendable>(host: String, _ body: () async throws -> T) async throws -> T {
        try await acquire(host: host)
        defer { release(host: host) }
        return try await body()
    }

    func acquire(host: String) async throws {
        try Task.checkCancellation()
        let limit = self.limit
        let waiting: UInt64? = state.withLockedValue { s in
            if s.takeSlot(of: host, limit: limit) { return nil }
            s.nextID += 1
            s.registering.insert(s.nextID)
            return s.nextID
        }
        guard let id = waiting else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now: Result<Void, any Error>? = state.withLockedValue { s in
                    s.registering.remove(id)
                    if s.cancelledWhileRegistering.remove(id) != nil { return .failure(CancellationError()) }
                    // A slot may have been freed since the first look.
                    if s.takeSlot(of: host, limit: limit) { return .success(()) }
                    s.waiters[host, default: WaitingLine()].append(id, Waiter { continuation.resume(with: $0) })
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLockedValue { s in
                if s.registering.contains(id) {
                    s.cancelledWhileRegistering.insert(id)
                    return nil
                }
                // Not in line: already given a slot, and the body sees the cancellation.
                return s.leave(host, id)
            }
            waiter?.resume(.failure(CancellationError()))
        }
    }

    /// Runs `body` holding a slot of `host`: the transfer's `admitted` one when it is for this
    /// host and no request took it yet, else one waited for. Every request of a transfer goes
    /// through here, so one that holds an unused admitted slot never waits for a second slot
    /// of the same host (with a limit of 1, that wait would never end).
    func withSlot<T: Sendable>(host: String, admitted: HostSlot?, _ body: () async throws -> T) async throws -> T {
        if admitted?.take(for: host) == true {
            defer { release(host: host) }
            return try await body()
        }
        return try await withSlot(host: host, body)
    }

    /// Waits for a slot of `host` and hands it over as a ``HostSlot``, for a request to come.
    func admit(host: String) async throws -> HostSlot {
        try await acquire(host: host)
        return slot(host: host)
    }

    /// Requests holding a slot of `host` (for tests and diagnostics).
    func active(host: String) -> Int { state.withLockedValue { $0.active[host] ?? 0 } }

    /// Requests waiting for a slot of `host`.
    func waiting(host: String) -> Int { state.withLockedValue { $0.waiters[host]?.count ?? 0 } }

    func release(host: String) {
        let next: Waiter? = state.withLockedValue { s in
            // The slot passes straight to the next waiter; `active` stays the same.
            if let next = s.waiters[host]?.popFirst() {
                if s.waiters[host]?.isEmpty == true { s.waiters[host] = nil }
                return next
            }
            s.active[host, default: 1] -= 1
            if s.active[host] == 0 { s.active[host] = nil }
            return nil
        }
        next?.resume(.success(()))
    }

    /// Asks for a slot of `host` for a transfer that has no task yet: nil when one was free
    /// (it is the caller's now), else the waiter's number, and `ready` is called when a slot
    /// passes to it (from the thread that released it), unless it was withdrawn first.
    func enqueue(host: String, _ ready: @escaping @Sendable () -> Void) -> UInt64? {
        let limit = self.limit
        return state.withLockedValue { s in
            if s.takeSlot(of: host, limit: limit) { return nil }
            s.nextID += 1
            s.waiters[host, default: WaitingLine()].append(s.nextID, Waiter { _ in ready() })
            return s.nextID
        }
    }

    /// Takes waiter `id` out of `host`'s queue: true when it was still there (it will not be
    /// called), false when a slot already passed to it.
    func withdraw(host: String, id: UInt64) -> Bool {
        state.withLockedValue { s in
            s.leave(host, id) != nil
        }
    }

    /// A slot of `host` that the caller holds, as a ``HostSlot`` for the transfer's first request.
    func slot(host: String) -> HostSlot {
        HostSlot(host: host, limiter: self)
    }
}

/// A slot taken before a transfer's first request (``HostLimiter/admit(host:)``): the first
/// request to its host uses it; if none does before the transfer waits to try again or ends (a
/// cached answer, an error before any request), it goes back then. Given back exactly once.
final class HostSlot: Sendable {
    let host: String
    private let limiter: HostLimiter
    private let held = NIOLockedValueBox(true)

    fileprivate init(host: String, limiter: HostLimiter) {
        self.host = host
        self.limiter = limiter
    }

    /// The slot, for a request to `host`: true once, and only for its own host. The caller
    /// releases it (``HostLimiter/release(host:)``) when the request is done.
    func take(for host: String) -> Bool {
        host == self.host && claim()
    }

    /// Releases the slot if no request took it.
    func releaseIfUnused() {
        if claim() { limiter.release(host: host) }
    }

    /// True for the first caller only: the slot is then theirs to use or give back.
    private func claim() -> Bool {
        held.withLockedValue { held in
            defer { held = false }
            return held
        }
    }
}
