@testable import FerryDaemon
import Synchronization
import Testing

/// ferryd's work runs in lanes of task groups (`JobLanes`), not one group of thousands.
@Suite("Job lanes")
struct JobLanesTests {
    @Test("jobs handed in run side by side across the lanes; a cancelled runner returns once they ended, and takes no more")
    func runsAndEnds() async throws {
        let lanes = JobLanes()
        let gate = Gate()
        let started = Mutex(0)
        let returned = Mutex(false)
        let runner = Task {
            await lanes.run { _ in
                started.withLock { $0 += 1 }
                await gate.pass()
            }
            returned.withLock { $0 = true }
        }
        let count = JobLanes.count * 3 + 1
        for _ in 0..<count { #expect(lanes.hand(.stop)) }
        for _ in 0..<1000 where started.withLock({ $0 }) < count { try await Task.sleep(for: .milliseconds(10)) }
        let running = started.withLock { $0 }
        #expect(running == count, "every job handed in is running at once (waited 10 s)")

        runner.cancel()
        try await Task.sleep(for: .milliseconds(100))
        let returnedEarly = returned.withLock { $0 }
        #expect(!returnedEarly, "the runner waits for the jobs that are running")
        gate.open()
        await runner.value
        let returnedAtLast = returned.withLock { $0 }
        #expect(returnedAtLast)
        #expect(!lanes.hand(.stop), "after the runner ended, a job is refused")
        let ran = started.withLock { $0 }
        #expect(ran == count)
    }
}

/// Holds whoever passes until it is opened; it ignores cancellation, as a job that must finish its work does.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func pass() async {
        await withCheckedContinuation { continuation in
            let goes = state.withLock { state in
                if !state.open { state.waiting.append(continuation) }
                return state.open
            }
            if goes { continuation.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
