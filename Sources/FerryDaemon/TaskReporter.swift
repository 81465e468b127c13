import FerryEngine
import FerryProtocol
import FerryStore
import Foundation
import NIOConcurrencyHelpers

/// The engine's observer for one attempt: keeps the totals, the download's validator and
/// the upload's resource; sends live progress (coalesced) and saves the resume point every
/// `progressPersistInterval`; turns a 429/503 into a stored retry instead of a response.
final class TaskReporter: TransferObserver {
    struct Snapshot: Sendable {
        var bytesSent: Int64 = 0
        var bytesReceived: Int64 = 0
        var bytesExpectedToSend: Int64?
        var bytesExpectedToReceive: Int64?
        var validator: String?
        var uploadResource: ResumableUploadPoint?
        var retryHint: RetryHint?
    }

    private struct State {
        var snapshot = Snapshot()
        var lastLive: ContinuousClock.Instant?
        var lastPersist: ContinuousClock.Instant = .now
    }

    let key: TaskKey
    let kind: TaskRecord.Kind
    let daemon: Daemon
    let clock: any DaemonClock
    let liveInterval: Duration
    let persistInterval: Duration
    private let state = NIOLockedValueBox(State())

    init(key: TaskKey, kind: TaskRecord.Kind, daemon: Daemon, clock: any DaemonClock, configuration: DaemonConfiguration) {
        self.key = key
        self.kind = kind
        self.daemon = daemon
        self.clock = clock
        self.liveInterval = .milliseconds(Int64(configuration.progressInterval * 1000))
        self.persistInterval = .milliseconds(Int64(configuration.progressPersistInterval * 1000))
    }

    var snapshot: Snapshot { state.withLockedValue { $0.snapshot } }

    func transferDidReceive(response: Response) async -> Bool {
        if RetryRules.retryableStatuses.contains(response.statusCode) {
            let delay = RetryPolicy.parseRetryAfter(response.headers["Retry-After"], now: clock.now)
            state.withLockedValue { $0.snapshot.retryHint = RetryHint(statusCode: response.statusCode, retryAfter: delay) }
            return false
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

    func transferDidResume(atOffset offset: Int64, expectedTotal: Int64) {
        report(force: true) { snapshot in
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
            let persist = force || now - state.lastPersist >= persistInterval
            if persist { state.lastPersist = now }
            return (live, persist, state.snapshot)
        }
        guard live || persist else { return }
        let key = key
        Task { [daemon] in
            if live {
                await daemon.broadcast(TaskProgress(
                    sessionIdentifier: key.session, taskIdentifier: key.task, bytesSent: snapshot.bytesSent,
                    bytesReceived: snapshot.bytesReceived, bytesExpectedToSend: snapshot.bytesExpectedToSend,
                    bytesExpectedToReceive: snapshot.bytesExpectedToReceive))
            }
            if persist { await daemon.persistProgress(key, snapshot) }
        }
    }
}

/// A 429 or 503 answer, and the `Retry-After` it carried.
struct RetryHint: Sendable, Hashable {
    var statusCode: Int
    var retryAfter: Duration?
}

/// Which failed attempts ferryd tries again, and when (docs/ferryd.md, "Retries").
///
/// - 429 and 503: the server said it did not handle the request, so any method is tried
///   again: exactly `Retry-After` later when given, else after the backoff.
/// - Network failures (lost or refused connections, time-outs, DNS): tried again with
///   exponential backoff and jitter when repeating is safe: an idempotent method, an upload
///   the server lets us resume, or a failure before anything was sent (cannot connect or
///   find the host). A POST whose connection broke after it was sent is not repeated: the
///   server may have acted on it, so the task fails and is never reported successful
///   without a response.
/// - Everything else fails the task.
/// - Nothing is retried past the task's resource deadline (`timeoutIntervalForResource`).
struct RetryRules: Sendable {
    static let retryableStatuses: Set<Int> = [429, 503]
    var initialDelay: TimeInterval
    var maximumDelay: TimeInterval

    enum Decision: Hashable, Sendable {
        case retry(at: Date, reason: TaskRecord.RetryReason, code: String, message: String)
        case fail(code: String, message: String)
    }

    static func isIdempotent(_ method: String) -> Bool {
        ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(method.uppercased())
    }

    /// The wait after `failures` failed attempts: `initialDelay × 2ⁿ⁻¹`, capped, times a
    /// random 0.5…1.0.
    func backoff(afterFailures failures: Int, random: Double = .random(in: 0...1)) -> TimeInterval {
        let raw = initialDelay * pow(2, Double(min(max(failures - 1, 0), 30)))
        return min(raw, maximumDelay) * (0.5 + 0.5 * min(max(random, 0), 1))
    }

    func decide(
        error: FerryError, hint: RetryHint?, method: String, resumableUpload: Bool, failures: Int,
        now: Date, deadline: Date, random: Double = .random(in: 0...1)
    ) -> Decision {
        let at: Date
        let reason: TaskRecord.RetryReason
        let code: String
        let message: String
        if let hint {
            code = "http\(hint.statusCode)"
            if let retryAfter = hint.retryAfter {
                let seconds = Double(retryAfter.components.seconds) + Double(retryAfter.components.attoseconds) / 1e18
                at = now.addingTimeInterval(seconds)
                reason = .retryAfter
                message = "HTTP \(hint.statusCode) with Retry-After \(Int(seconds.rounded())) s"
            } else {
                at = now.addingTimeInterval(backoff(afterFailures: failures, random: random))
                reason = .backoff
                message = "HTTP \(hint.statusCode) without Retry-After"
            }
        } else if error.isRetryable {
            let nothingSent = error.code == .cannotConnectToHost || error.code == .cannotFindHost
            guard Self.isIdempotent(method) || resumableUpload || nothingSent else {
                return .fail(
                    code: error.code.description,
                    message: "\(error.message); the \(method) request is not sent again because the server may already have acted on it")
            }
            at = now.addingTimeInterval(backoff(afterFailures: failures, random: random))
            reason = .backoff
            code = error.code.description
            message = error.message
        } else {
            return .fail(code: error.code.description, message: error.message)
        }
        guard at <= deadline else {
            return .fail(
                code: "timedOut",
                message: "gave up: the next attempt (\(message)) would come after the task's timeoutIntervalForResource")
        }
        return .retry(at: at, reason: reason, code: code, message: message)
    }
}
