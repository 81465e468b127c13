import FerryCore
import Foundation
import Synchronization
import Testing

/// `StopControl`: one piece of work stopped alone (a transfer of a session, an attempt of
/// ferryd), and its end waited for. Real tasks and real sleeps, each bounded.
@Suite("StopControl")
struct StopControlTests {
    /// Work that sleeps up to 30 s and says whether it was cancelled. The flag is the
    /// evidence: work that was not cancelled sleeps its 30 s out and leaves it false, so no
    /// test here times itself (a loaded machine once stalled one for 5 s).
    final class Sleeper: Sendable {
        let cancelled = Mutex(false)
        func work() async {
            do { try await Task.sleep(for: .seconds(30)) } catch { cancelled.withLock { $0 = true } }
        }
    }

    @Test("stop() cancels the running work, and ended() returns once it has let go")
    func stopWhileRunning() async throws {
        let control = StopControl()
        let sleeper = Sleeper()
        let running = Task { await control.runs { await sleeper.work() } }
        try await Task.sleep(for: .milliseconds(50))
        control.stop()
        await control.ended()
        await running.value
        #expect(sleeper.cancelled.withLock { $0 })
    }

    @Test("stop() before the work starts cancels it as it starts")
    func stopBeforeRunning() async {
        let control = StopControl()
        let sleeper = Sleeper()
        control.stop()
        await control.runs { await sleeper.work() }
        #expect(sleeper.cancelled.withLock { $0 })
    }

    @Test("cancelling the caller cancels the work; work that ends on its own is not cancelled")
    func callerCancellation() async {
        let control = StopControl()
        let sleeper = Sleeper()
        let caller = Task { await control.runs { await sleeper.work() } }
        caller.cancel()
        await caller.value
        #expect(sleeper.cancelled.withLock { $0 })

        let quick = StopControl()
        let finished = Mutex(false)
        await quick.runs { finished.withLock { $0 = !Task.isCancelled } }
        quick.stop()  // after the end: nothing to cancel
        await quick.ended()
        #expect(finished.withLock { $0 })
    }
}
