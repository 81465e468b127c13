import FerryCore
import FerrySystem
import Foundation
import NIOConcurrencyHelpers

/// Keeps the process alive while short work finishes: the `performExpiringActivity` idea.
///
/// A short request (an upload token, a small JSON post) does not need a background session;
/// it needs the process not to die in the middle of it. Inside `perform`, SIGTERM and SIGINT
/// do not end the process at once: the work is told (``isExpiring``), gets `grace` to finish,
/// and the process then ends with the signal's status, as it would have.
///
/// ```swift
/// let token = try await ProcessActivity.perform(reason: "fetch an upload token") { activity in
///     try await Session.shared.data(for: Request(url: tokenURL, method: "POST")).0
/// }
/// backgroundSession.uploadTask(with: upload(token), fromFile: photo).resume()   // ferryd's from here
/// ```
public final class ProcessActivity: Sendable {
    /// What the work is, for logs.
    public let reason: String
    private let expiring = NIOLockedValueBox<Int32?>(nil)

    private init(reason: String) { self.reason = reason }

    /// Whether the process was asked to end while the work runs: finish quickly.
    public var isExpiring: Bool { expiring.withLockedValue { $0 != nil } }

    /// Runs `work` with termination deferred; see the type's description.
    public static func perform<T: Sendable>(
        reason: String, grace: Duration = .seconds(10), _ work: @Sendable (ProcessActivity) async throws -> T
    ) async throws -> T {
        let activity = ProcessActivity(reason: reason)
        let watch = SignalWatch(activity: activity, grace: grace)
        defer { watch.end() }
        return try await work(activity)
    }

    func expire(with signal: Int32) {
        expiring.withLockedValue { if $0 == nil { $0 = signal } }
    }

    var pendingSignal: Int32? { expiring.withLockedValue { $0 } }
}

/// SIGTERM and SIGINT turned into "expiring" for one activity; when it ends (or its grace
/// runs out) a signal that came is delivered again with its default action.
private final class SignalWatch: Sendable {
    private let activity: ProcessActivity
    private let handling: Signals.Handling
    /// Where the grace's timer runs.
    private static let queue = DispatchQueue(label: "ferry.process-activity")

    init(activity: ProcessActivity, grace: Duration) {
        self.activity = activity
        handling = Signals.handle([SIGTERM, SIGINT]) { [activity] signalNumber in
            activity.expire(with: signalNumber)
            Self.queue.asyncAfter(deadline: .now() + grace.timeInterval) {
                Self.endProcess(signalNumber)  // out of grace
            }
        }
    }

    func end() {
        handling.stop()
        if let pending = activity.pendingSignal { Self.endProcess(pending) }
    }

    /// The end the signal would have brought: its default action.
    private static func endProcess(_ signalNumber: Int32) {
        signal(signalNumber, SIG_DFL)
        // The threads of Swift's pool and of dispatch block signals; unblock it here, where
        // `raise` delivers it, so its default action ends the process.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, signalNumber)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(signalNumber)
    }
}
