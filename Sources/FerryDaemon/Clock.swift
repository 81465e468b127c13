public import Foundation
import NIOConcurrencyHelpers

/// Where ferryd gets the time, so that backoff, `Retry-After`, begin dates and relaunch
/// delays can be tested by advancing a ``ManualClock`` instead of sleeping.
///
/// ```swift
/// let clock = ManualClock(now: Date(timeIntervalSince1970: 0))
/// async let woke: Void = clock.sleep(until: Date(timeIntervalSince1970: 2))
/// clock.advance(by: 2)   // the sleeper wakes
/// ```
public protocol DaemonClock: Sendable {
    /// Wall-clock now: stored dates (`next_attempt_at`, begin dates) are compared with it.
    var now: Date { get }
    /// Returns at `deadline` (or at once if it passed); throws `CancellationError` when cancelled.
    func sleep(until deadline: Date) async throws
}

/// Real time.
public struct SystemClock: DaemonClock {
    public init() {}
    public var now: Date { Date() }
    public func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSinceNow
        if seconds > 0 { try await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up)))) }
        try Task.checkCancellation()
    }
}

/// Time that moves only when a test says so.
public final class ManualClock: DaemonClock {
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

    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = NIOLockedValueBox(State(now: now))
    }

    public var now: Date { state.withLockedValue { $0.now } }

    /// How many sleepers wait now: a test waits for this before advancing, so that it does
    /// not advance past a sleep that has not started yet.
    public var sleeperCount: Int { state.withLockedValue { $0.sleepers.count } }

    /// The earliest deadline anyone sleeps until.
    public var nextDeadline: Date? { state.withLockedValue { $0.sleepers.values.map(\.deadline).min() } }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by seconds: TimeInterval) {
        advance(to: now.addingTimeInterval(seconds))
    }

    public func advance(to date: Date) {
        let due: [CheckedContinuation<Void, any Error>] = state.withLockedValue { state in
            state.now = max(state.now, date)
            let ready = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in ready.keys { state.sleepers[id] = nil }
            return ready.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    public func sleep(until deadline: Date) async throws {
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

/// A wake-up call that is not lost: `signal()` before `wait()` makes the next wait return at
/// once. The scheduler waits on it (new submission, a task finished) or on the clock.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = NIOLockedValueBox(State())

    func signal() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLockedValue { state in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns on a signal (or at once if one is pending), at `deadline` on `clock`, or when
    /// the calling task is cancelled.
    func wait(until deadline: Date?, clock: any DaemonClock) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.signalled() }
            if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
            await group.next()
            group.cancelAll()
        }
    }

    private func signalled() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLockedValue { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    if Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
