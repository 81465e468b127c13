@testable import FerryDaemon
import Foundation
import NIOConcurrencyHelpers

// A test double: ferryd's clock for tests that advance time instead of sleeping.
//
//     let clock = ManualClock(now: Date(timeIntervalSince1970: 0))
//     async let woke: Void = clock.sleep(until: Date(timeIntervalSince1970: 2))
//     clock.advance(by: 2)   // the sleeper wakes

/// Time that moves only when a test says so.
final class ManualClock: DaemonClock {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }
    private let state: NIOLockedValueBox<State>

    init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = NIOLockedValueBox(State(now: now))
    }

    var now: Date { state.withLockedValue { $0.now } }

    /// How many sleepers wait now: a test waits for this before advancing, so that it does
    /// not advance past a sleep that has not started yet.
    var sleeperCount: Int { state.withLockedValue { $0.sleepers.count } }

    /// The earliest deadline anyone sleeps until.
    var nextDeadline: Date? { state.withLockedValue { $0.sleepers.values.map(\.deadline).min() } }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    func advance(by seconds: TimeInterval) {
        advance(to: now.addingTimeInterval(seconds))
    }

    func advance(to date: Date) {
        let due: [CheckedContinuation<Void, any Error>] = state.withLockedValue { state in
            state.now = max(state.now, date)
            let ready = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in ready.keys { state.sleepers[id] = nil }
            return ready.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    func sleep(until deadline: Date) async throws {
        let id = state.withLockedValue { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Bool? = state.withLockedValue { state in
                    if Task.isCancelled { return false }
                    if deadline <= state.now { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                switch resumeNow {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let cancelled = state.withLockedValue { $0.sleepers.removeValue(forKey: id) }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }
}

