@testable import FerryEngine
import FerryTestSupport
import Synchronization
import Testing

/// The per-host limit on its own: waiting in order, a cancelled waiter leaving its place, and
/// a slot handed over rather than freed. (The end-to-end proof, counting connections at a
/// real server, is in DownloadTests and the CLI's --many test.)
@Suite("Per-host limit")
struct HostLimiterTests {
    @Test("waiters get the slot in arrival order; another host is not held up")
    func fifoPerHost() async throws {
        let limiter = HostLimiter(limit: 1)
        try await limiter.acquire(host: "a")
        try await limiter.acquire(host: "b")  // its own slot
        let order = Order()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 1...3 {
                group.addTask {
                    try await limiter.withSlot(host: "a") { order.numbers.withLock { $0.append(number) } }
                }
                // Each one queued before the next is added.
                try await poll(until: "waiter \(number) to queue for host a", every: .milliseconds(5),
                               observed: "\(limiter.waiting(host: "a")) waiting") { limiter.waiting(host: "a") >= number }
            }
            #expect(limiter.waiting(host: "a") == 3)
            limiter.release(host: "a")
            try await group.waitForAll()
        }
        #expect(order.numbers.withLock { $0 } == [1, 2, 3])
        #expect(limiter.active(host: "a") == 0)
        #expect(limiter.active(host: "b") == 1)
    }

    @Test("a cancelled waiter leaves the queue with CancellationError and takes no slot")
    func cancelledWaiter() async throws {
        let limiter = HostLimiter(limit: 1)
        try await limiter.acquire(host: "a")
        let waiter = Task { try await limiter.acquire(host: "a") }
        try await poll(until: "the waiter to queue for host a", every: .milliseconds(5),
                       observed: "\(limiter.waiting(host: "a")) waiting") { limiter.waiting(host: "a") >= 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(limiter.waiting(host: "a") == 0)
        limiter.release(host: "a")
        #expect(limiter.active(host: "a") == 0, "the slot was freed, not handed to the cancelled waiter")
        try await limiter.acquire(host: "a")  // free at once
        #expect(limiter.active(host: "a") == 1)
    }

    @Test("a waiter cancelled from the middle of a long queue leaves the others in their order")
    func cancelledFromTheMiddle() async throws {
        let limiter = HostLimiter(limit: 1)
        try await limiter.acquire(host: "a")
        let order = Order()
        var waiters: [Int: Task<Void, any Error>] = [:]
        for number in 1...50 {
            waiters[number] = Task { try await limiter.withSlot(host: "a") { order.numbers.withLock { $0.append(number) } } }
            try await poll(until: "waiter \(number) to queue for host a", every: .milliseconds(2),
                           observed: "\(limiter.waiting(host: "a")) waiting") { limiter.waiting(host: "a") >= number }
        }
        waiters[25]?.cancel()
        await #expect(throws: CancellationError.self) { try await waiters[25]?.value }
        #expect(limiter.waiting(host: "a") == 49)
        limiter.release(host: "a")
        for number in 1...50 where number != 25 { try await waiters[number]?.value }
        #expect(order.numbers.withLock { $0 } == Array(1...24) + Array(26...50))
        #expect(limiter.waiting(host: "a") == 0)
        #expect(limiter.active(host: "a") == 0)
    }

    @Test("an admitted slot goes to one request to its own host, or back to the limiter unused; never twice")
    func admittedSlot() async throws {
        let limiter = HostLimiter(limit: 1)
        let slot = try await limiter.admit(host: "a")
        #expect(limiter.active(host: "a") == 1)
        #expect(!slot.take(for: "b"), "not for another host")
        #expect(slot.take(for: "a"))
        #expect(!slot.take(for: "a"), "once")
        slot.releaseIfUnused()
        #expect(limiter.active(host: "a") == 1, "taken: the request releases it")
        limiter.release(host: "a")
        #expect(limiter.active(host: "a") == 0)

        let unused = try await limiter.admit(host: "a")
        unused.releaseIfUnused()
        unused.releaseIfUnused()
        #expect(limiter.active(host: "a") == 0, "released once")
    }

    @Test("a transfer queued behind its host's limit: its request time-out runs while it waits, as on the platform; slots all come back")
    func queuedTransfers() async throws {
        try await withServerAndEngine(configure: { $0.maximumConnectionsPerHost = 1 }) { server, engine in
            let host = "127.0.0.1"
            // The slot is held at a gate until a second request (another engine's) joins it:
            // no window of time to observe it in, however slow the machine is.
            let slow = Task { try await engine.run(Transfer(request: Request(url: url(server, "/gate/held?count=2")))) }
            try await poll(until: "the slow transfer to hold the host's slot", observed: "\(engine.limiter.active(host: host)) active") {
                engine.limiter.active(host: host) == 1
            }
            var impatient = Transfer(request: Request(url: url(server, "/bytes/10")))
            impatient.idleTimeout = 0.3
            let failure = await expectFerryError(.timedOut) { try await engine.run(impatient) }
            #expect(failure?.message.contains("timeoutIntervalForRequest") == true, "\(failure?.message ?? "")")
            let other = try TransferEngine(configuration: EngineConfiguration())
            let opener = try await other.run(Transfer(request: Request(url: url(server, "/gate/held?count=2"))))
            try await other.shutdown()
            #expect(opener.response.statusCode == 200)
            #expect(try await slow.value.response.statusCode == 200)
            for size in 1...5 {
                #expect(try await engine.run(Transfer(request: Request(url: url(server, "/bytes/\(size)")))).bytesReceived == Int64(size))
            }
            #expect(engine.limiter.active(host: host) == 0 && engine.limiter.waiting(host: host) == 0)
        }
    }
}

/// The order in which waiters got their slot.
final class Order: Sendable {
    let numbers = Mutex<[Int]>([])
}
