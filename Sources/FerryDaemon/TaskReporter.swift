import FerryCore
import FerryEngine
import FerryProtocol
import FerryStore
import Foundation
import NIOConcurrencyHelpers

/// The engine's observer for one attempt: keeps the totals, the download's validator and
/// the upload's resource; sends live progress (coalesced); saves a download's resume point
/// with its first bytes (unless little is left), then progress every
/// `progressPersistInterval` while bytes move (and nothing once the whole body is in: the
/// completion saves it); turns a 429/503 into a stored retry instead of a response when the
/// rulebook says so (with the task's policy).
final class TaskReporter: TransferObserver {
    struct Snapshot: Sendable {
        var bytesSent: Int64 = 0
        var bytesReceived: Int64 = 0
        var bytesExpectedToSend: Int64?
        var bytesExpectedToReceive: Int64?
        var validator: String?
        var uploadResource: ResumableUploadPoint?
        var retryHint: RetryHint?

        /// Every byte the server announced has arrived (false when it announced no length).
        var bodyComplete: Bool {
            bytesExpectedToReceive.map { bytesReceived >= $0 } ?? false
        }

        /// At most `TaskReporter.smallRemainder` bytes left to receive: not worth a resume
        /// point of its own (a new connection reads a small body in a few 2 KiB pieces).
        var nearlyComplete: Bool {
            bytesExpectedToReceive.map { $0 - bytesReceived <= TaskReporter.smallRemainder } ?? false
        }
    }

    private struct State {
        var snapshot = Snapshot()
        var lastLive: ContinuousClock.Instant?
        /// The last save, or the attempt's first bytes: nil before them. Counting from the
        /// attempt's start saved a task that waited a second for its answer on its first bytes,
        /// a write of its own just before the one that completes it.
        var lastPersist: ContinuousClock.Instant?
    }

    /// A download's first bytes save its resume point unless at most this much is left:
    /// fetching that again after a crash costs less than a store write per small download.
    static let smallRemainder: Int64 = 1 << 20

    let key: TaskKey
    let kind: TaskKind
    /// What the rulebook needs for a retryable status: the task's policy, its request, the
    /// attempts so far (this one included) and its resource deadline.
    let retry: RetryContext
    let daemon: Daemon
    let clock: any DaemonClock
    let liveInterval: Duration
    let persistInterval: Duration
    private let state = NIOLockedValueBox(State())

    /// The task had a resume point stored when this attempt began: a body starting afresh
    /// replaces it, and is saved at once.
    let hadResumePoint: Bool

    init(
        key: TaskKey, kind: TaskKind, hadResumePoint: Bool, retry: RetryContext, daemon: Daemon, clock: any DaemonClock,
        configuration: DaemonConfiguration
    ) {
        self.key = key
        self.kind = kind
        self.hadResumePoint = hadResumePoint
        self.retry = retry
        self.daemon = daemon
        self.clock = clock
        self.liveInterval = .milliseconds(Int64(configuration.progressInterval * 1000))
        self.persistInterval = .milliseconds(Int64(configuration.progressPersistInterval * 1000))
    }

    var snapshot: Snapshot { state.withLockedValue { $0.snapshot } }

    /// The session's owner answers, when it said it does (the app's delegate); else the
    /// default: the credential submitted with the task for the realm, once.
    func transferDidReceive(challenge: AuthenticationChallenge) async -> ChallengeAnswer {
        await daemon.answer(challenge, of: key)
    }

    func transferDidReceive(response: Response) async -> Bool {
        if retry.policy.retryableStatuses.contains(response.statusCode) {
            let retryAfter = RetryPolicy.parseRetryAfter(response.headers["Retry-After"], now: clock.now)
            let decision = retry.decide(.answered(status: response.statusCode, retryAfter: retryAfter), now: clock.now)
            if case .deliver = decision {} else {
                state.withLockedValue { $0.snapshot.retryHint = RetryHint(statusCode: response.statusCode, decision: decision) }
                return false
            }
        }
        if kind == .download {
            let validator: String? = if let etag = response.etag, !etag.hasPrefix("W/") { etag } else { response.lastModified }
            state.withLockedValue { $0.snapshot.validator = validator }
        }
        return true
    }

    func transferDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        report { snapshot in
            snapshot.bytesSent = totalBytesSent
            if totalBytesExpectedToSend >= 0 { snapshot.bytesExpectedToSend = totalBytesExpectedToSend }
        }
    }

    func transferDidWrite(bytes: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        report { snapshot in
            snapshot.bytesReceived = totalBytesWritten
            if totalBytesExpectedToWrite >= 0 { snapshot.bytesExpectedToReceive = totalBytesExpectedToWrite }
        }
    }

    /// Saved at once when the transfer goes on from a resume point, or starts afresh instead
    /// of one stored; the engine says so at offset 0 for every new download's body too, which
    /// has nothing to save (a write per download, just before its completion's).
    func transferDidResume(atOffset offset: Int64, expectedTotal: Int64) {
        report(force: offset > 0 || hadResumePoint) { snapshot in
            if self.kind == .upload {
                snapshot.bytesSent = offset
                if expectedTotal >= 0 { snapshot.bytesExpectedToSend = expectedTotal }
            } else {
                snapshot.bytesReceived = offset
                if expectedTotal >= 0 { snapshot.bytesExpectedToReceive = expectedTotal }
            }
        }
    }

    func transferDidCreateUploadResource(_ point: ResumableUploadPoint) {
        report(force: true) { $0.uploadResource = point }
    }

    /// Applies a change, then sends live progress and saves to the store when their
    /// intervals have passed (`force`: save now, e.g. a new upload resource).
    private func report(force: Bool = false, _ change: (inout Snapshot) -> Void) {
        let now = ContinuousClock.now
        let (live, persist, snapshot) = state.withLockedValue { state -> (Bool, Bool, Snapshot) in
            change(&state.snapshot)
            let live = state.lastLive.map { now - $0 >= liveInterval } ?? true
            if live { state.lastLive = now }
            // Saved: a download's first bytes with its resume point (the validator) when more
            // than `smallRemainder` is still to come, then bytes every interval from the first
            // ones. Not saved: a report before any byte moved (the request sent, the answer's
            // head: nothing to resume from, and the interval would count from there), nor one
            // with the whole body in (the completion that follows saves the same): a small
            // download's save at its answer's head was a write of its own just before its
            // completion's.
            let moved = state.snapshot.bytesSent + state.snapshot.bytesReceived > 0
            let due = state.lastPersist.map { now - $0 >= persistInterval } ?? (state.snapshot.validator != nil && !state.snapshot.nearlyComplete)
            let persist = force || (moved && due && !state.snapshot.bodyComplete)
            if persist || (moved && state.lastPersist == nil) { state.lastPersist = now }
            return (live, persist, state.snapshot)
        }
        guard live || persist else { return }
        daemon.schedule(.progress(key, snapshot, live: live, persist: persist))
    }
}

/// A retryable status the rulebook said to try again after: the status, and the decision
/// (made once, with its jitter) that the scheduler stores.
struct RetryHint: Sendable, Hashable {
    var statusCode: Int
    var decision: RetryDecision
}

/// One task's side of the rulebook in ferryd: its policy (the session's, or ferryd's
/// default), what repeating its request costs, and its resource deadline.
struct RetryContext: Sendable {
    var policy: RetryPolicy
    var request: RetryRequest
    /// Attempts started so far, this one included.
    var failures: Int
    var deadline: Date

    init(_ record: TaskRecord, defaultPolicy: RetryPolicy, deadline: Date) {
        policy = record.retryPolicy ?? defaultPolicy
        // ferryd schedules every retry itself (stored, with its clock): no immediate resend.
        request = RetryRequest(method: record.request.method, resumes: record.uploadResourceURL != nil, immediateResendAvailable: false)
        failures = record.attemptCount
        self.deadline = deadline
    }

    func decide(_ outcome: AttemptOutcome, now: Date, random: Double = .random(in: 0...1)) -> RetryDecision {
        let left = max(0, deadline.timeIntervalSince(now))
        return policy.decide(outcome, for: request, failures: failures, timeLeft: .milliseconds(Int64(left * 1000)), random: random)
    }
}
