@testable import FerryEngine
import FerryTestSupport
import Foundation
import Synchronization
import Testing

/// A transfer's turn at its host, asked for before it has a task (``TransferTurn``): ready at
/// once when the host has room, in order when a slot comes back, withdrawn or timed out in the
/// queue without taking a slot.
@Suite("Transfer turns")
struct TransferTurnTests {
    /// What a turn's `ready` was told, in order.
    final class Told: Sendable {
        let outcomes = Mutex<[String: Result<Void, FerryError>]>([:])
        func ready(_ name: String) -> @Sendable (Result<TransferTurn, FerryError>) -> Void {
            { result in self.outcomes.withLock { $0[name] = result.map { _ in () } } }
        }
        subscript(_ name: String) -> Result<Void, FerryError>? { outcomes.withLock { $0[name] } }
        func isReady(_ name: String) -> Bool { if case .success? = self[name] { true } else { false } }
        func error(_ name: String) -> FerryError? { if case .failure(let error)? = self[name] { error } else { nil } }
    }

    @Test("with room a turn is ready as it queues; behind the limit it waits, and the slot a finished run gives back passes to it")
    func readyInOrder() async throws {
        try await withServerAndEngine(configure: { $0.maximumConnectionsPerHost = 1 }) { server, engine in
            let told = Told()
            let first = Transfer(request: Request(url: url(server, "/bytes/10")))
            let firstTurn = try engine.turn(for: first, observer: NoObserver(), ready: told.ready("first"))
            firstTurn.queue()
            #expect(told.isReady("first"), "ready at once: \(String(describing: told["first"]))")

            let second = Transfer(request: Request(url: url(server, "/bytes/20")))
            let secondTurn = try engine.turn(for: second, observer: NoObserver(), ready: told.ready("second"))
            secondTurn.queue()
            #expect(told["second"] == nil && engine.limiter.waiting(host: "127.0.0.1") == 1, "behind the first")

            let result = try await engine.run(first, turn: firstTurn, observer: NoObserver(), cancellingWith: {})
            #expect(result.bytesReceived == 10)
            #expect(told.isReady("second"), "the slot passed on: \(String(describing: told["second"]))")
            #expect(try await engine.run(second, turn: secondTurn, observer: NoObserver(), cancellingWith: {}).bytesReceived == 20)
            #expect(engine.limiter.active(host: "127.0.0.1") == 0 && engine.limiter.waiting(host: "127.0.0.1") == 0)
        }
    }

    @Test("a turn withdrawn while it waits is told cancelled and takes no slot; one whose request time-out passes in the queue is told timedOut")
    func withdrawnAndTimedOut() async throws {
        try await withServerAndEngine(configure: { $0.maximumConnectionsPerHost = 1 }) { server, engine in
            let host = "127.0.0.1"
            let told = Told()
            let holder = Transfer(request: Request(url: url(server, "/bytes/10")))
            let holding = try engine.turn(for: holder, observer: NoObserver(), ready: told.ready("holder"))
            holding.queue()

            let withdrawn = try engine.turn(for: Transfer(request: Request(url: url(server, "/bytes/1"))), observer: NoObserver(), ready: told.ready("withdrawn"))
            withdrawn.queue()
            #expect(withdrawn.withdraw(), "it was waiting")
            #expect(told.error("withdrawn")?.code == .cancelled && engine.limiter.waiting(host: host) == 0, "\(String(describing: told["withdrawn"]))")
            #expect(!withdrawn.withdraw(), "once")

            var impatient = Transfer(request: Request(url: url(server, "/bytes/2")))
            impatient.idleTimeout = 0.3
            let waiting = try engine.turn(for: impatient, observer: NoObserver(), ready: told.ready("impatient"))
            waiting.queue()
            try await poll(until: "the queued turn's request time-out", timeout: .seconds(10), observed: "\(String(describing: told["impatient"]))") {
                told["impatient"] != nil
            }
            let timedOut = told.error("impatient")
            #expect(timedOut?.code == .timedOut && timedOut?.message.contains("timeoutIntervalForRequest") == true, "\(String(describing: timedOut))")
            #expect(engine.limiter.waiting(host: host) == 0 && engine.limiter.active(host: host) == 1, "only the holder's slot")

            _ = try await engine.run(holder, turn: holding, observer: NoObserver(), cancellingWith: {})
            #expect(engine.limiter.active(host: host) == 0, "given back, to nobody")
        }
    }
}
