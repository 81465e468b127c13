/// Caps how many requests run at once against one host (`httpMaximumConnectionsPerHost`).
///
/// AsyncHTTPClient's per-host limit is a *soft* limit; this one is hard: a request waits
/// here, in arrival order, until a slot is free. With at most N requests in flight the
/// pool never needs more than N connections to the host.
actor HostLimiter {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private let limit: Int
    private var active: [String: Int] = [:]
    private var waiters: [String: [Waiter]] = [:]
    private var nextID: UInt64 = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `body` holding one of `host`'s slots.
    nonisolated func withSlot<T: Sendable>(host: String, _ body: () async throws -> T) async throws -> T {
        try await acquire(host: host)
        do {
            let value = try await body()
            await release(host: host)
            return value
        } catch {
            await release(host: host)
            throw error
        }
    }

    func acquire(host: String) async throws {
        try Task.checkCancellation()
        if active[host, default: 0] < limit {
            active[host, default: 0] += 1
            return
        }
        nextID += 1
        let id = nextID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiters[host, default: []].append(Waiter(id: id, continuation: continuation))
            }
        } onCancel: {
            Task { await self.cancelWaiter(id: id, host: host) }
        }
    }

    func release(host: String) {
        if var queue = waiters[host], !queue.isEmpty {
            // The slot passes straight to the next waiter; `active` stays the same.
            let next = queue.removeFirst()
            waiters[host] = queue.isEmpty ? nil : queue
            next.continuation.resume()
            return
        }
        active[host, default: 1] -= 1
        if active[host] == 0 { active[host] = nil }
    }

    private func cancelWaiter(id: UInt64, host: String) {
        guard var queue = waiters[host], let index = queue.firstIndex(where: { $0.id == id }) else { return }
        let waiter = queue.remove(at: index)
        waiters[host] = queue.isEmpty ? nil : queue
        waiter.continuation.resume(throwing: CancellationError())
    }
}
