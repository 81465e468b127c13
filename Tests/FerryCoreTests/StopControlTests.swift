import FerryCore
import FerryTestSupport
import Foundation
import Synchronization
import Testing

/// `StopControl`: one piece of work stopped alone (a transfer of a session, an attempt of
/// ferryd), and its end waited for. Real tasks and real sleeps, each bounded.
@Suite("StopControl")
struct StopControlTests {
    @Test("stop() cancels the running work, and ended() returns once it has let go")
    func stopWhileRunning() async throws {
        let control = StopControl()
        let sleeper = CancellationProbe()
        let running = Task { await control.runs { await sleeper.work() } }
        try await Task.sleep(for: .milliseconds(50))
        control.stop()
        await control.ended()
        await running.value
        #expect(sleeper.wasCancelled)
    }

    @Test("stop() before the work starts cancels it as it starts")
    func stopBeforeRunning() async {
        let control = StopControl()
        let sleeper = CancellationProbe()
        control.stop()
        await control.runs { await sleeper.work() }
        #expect(sleeper.wasCancelled)
    }

    @Test("cancelling the caller cancels the work; work that ends on its own is not cancelled")
    func callerCancellation() async {
        let control = StopControl()
        let sleeper = CancellationProbe()
        let caller = Task { await control.runs { await sleeper.work() } }
        caller.cancel()
        await caller.value
        #expect(sleeper.wasCancelled)

        let quick = StopControl()
        let finished = Mutex(false)
        await quick.runs { finished.withLock { $0 = !Task.isCancelled } }
        quick.stop()  // after the end: nothing to cancel
        await quick.ended()
        #expect(finished.withLock { $0 })
    }

    @Test("two controllers waiting for the same work's end both return (a suspend and a lost route stopping one transfer), and a later wait returns at once", .timeLimit(.minutes(1)))
    func severalWaitForTheEnd() async {
        let control = StopControl()
        let sleeper = CancellationProbe()
        let work = Task { await control.runs { await sleeper.work() } }
        async let first: Void = control.ended()
        async let second: Void = control.ended()
        try? await Task.sleep(for: .milliseconds(20))
        control.stop()
        control.stop()
        _ = await (first, second)
        await work.value
        await control.ended()
        #expect(sleeper.wasCancelled)
    }
}
