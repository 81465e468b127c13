public import Foundation
import NIOConcurrencyHelpers

/// Where ferryd gets the time, so that backoff, `Retry-After`, begin dates and relaunch
/// delays can be tested with a clock that moves only when the test says so (the tests'
/// `ManualClock`) instead of sleeping.
///
/// ```swift
/// let daemon = try Daemon(configuration: configuration, store: store, clock: SystemClock())  // the default
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
