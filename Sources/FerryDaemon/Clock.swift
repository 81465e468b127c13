import FerryCore
public import Foundation

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

/// The scheduler's wake-up: a ``Signal`` (a new submission, a task finished) or the clock
/// reaching the next begin date or retry time, whichever comes first.
final class Wakeup: Sendable {
    private let signalled = Signal()

    func signal() { signalled.signal() }

    /// Forgets a wake-up asked for before now: called as a scheduling pass begins, since the
    /// pass reads the store and ferryd's state after it and so sees what the wake-up was for.
    /// (A submission arriving during a pass woke the loop for a second pass that found nothing.)
    func clear() { signalled.clear() }

    /// Returns on a signal (or at once if one is pending), at `deadline` on `clock`, or when
    /// the calling task is cancelled.
    func wait(until deadline: Date?, clock: any DaemonClock) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.signalled.wait() }
            if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
            await group.next()
            group.cancelAll()
        }
    }
}
