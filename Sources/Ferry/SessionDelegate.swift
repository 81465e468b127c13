public import FerryEngine
public import Foundation
import Synchronization

/// What to do with a data task's response.
public enum ResponseDisposition: Sendable {
    case allow
    case cancel
}

/// The callbacks of the classic `URLSession` tutorial, for Ferry. All have defaults; a
/// session calls them one at a time, in order, on its own serial queue.
///
/// ```swift
/// final class Downloads: SessionDelegate {
///     func session(_ session: Session, downloadTask: DownloadTask, didWriteData bytesWritten: Int64,
///                  totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) async {
///         print("\(totalBytesWritten) / \(totalBytesExpectedToWrite)")
///     }
///     func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
///         try? FileManager.default.moveItem(at: location, to: destination)  // else it is deleted
///     }
/// }
/// ```
public protocol SessionDelegate: AnyObject, Sendable {
    /// A data task's response head arrived. Return `.cancel` to stop it.
    func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition
    /// Part of a data task's body arrived.
    func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async
    /// Upload progress, coalesced; the last call carries the final totals.
    func session(_ session: Session, task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) async
    /// Download progress, coalesced; the last call carries the final totals.
    func session(_ session: Session, downloadTask: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) async
    /// A download continued from `fileOffset` (resume data, or a retry after a lost connection).
    func session(_ session: Session, downloadTask: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) async
    /// The download is complete at `location`. Move the file now: it is deleted when this returns.
    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async
    /// A redirect: return the request to follow (possibly changed), or nil to receive the
    /// redirect response itself.
    func session(_ session: Session, task: SessionTask, willPerformHTTPRedirection response: Response, newRequest request: Request) async -> Request?
    /// A `401` asks for credentials (HTTP Basic or Digest); `.performDefaultHandling` by default.
    /// A background session's tasks ask too, while this process owns the session (ferryd
    /// waits for the answer; otherwise it uses the credentials submitted with the task).
    func session(_ session: Session, task: SessionTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeAnswer
    /// A question about a TLS connection of the session: a server asked for a client
    /// certificate, or (when ``evaluatesServerTrust``) a host's certificates before the
    /// session's first request to it. `.performDefaultHandling` by default.
    func session(_ session: Session, didReceive challenge: ConnectionChallenge) async -> ConnectionChallengeAnswer
    /// true: each HTTPS host's certificates are shown to `session(_:didReceive:)` (one TLS
    /// handshake of its own per host and session). false by default.
    var evaluatesServerTrust: Bool { get }
    /// The task ended: `error` is nil on success (whatever the HTTP status).
    /// The task's requests, timed: called once, just before `didCompleteWithError`.
    func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async
    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async
    /// Background sessions with ``Configuration/waitsForConnectivity``: the task waits for the
    /// network (no route to its host, or only links the configuration does not allow). Called
    /// at most once per task; the task starts by itself when the network allows.
    func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask) async
    /// The session was invalidated (after `finishTasksAndInvalidate` or `invalidateAndCancel`).
    func session(_ session: Session, didBecomeInvalidWithError error: FerryError?) async
    /// Background sessions: every event ferryd kept for this session has been delivered.
    /// An app that ferryd launched calls the completion handler of its ``BackgroundLaunch`` here.
    func sessionDidFinishEvents(forBackgroundSession session: Session) async
}

extension SessionDelegate {
    public func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition { .allow }
    public func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {}
    public func session(_ session: Session, task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) async {}
    public func session(_ session: Session, downloadTask: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) async {}
    public func session(_ session: Session, downloadTask: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) async {}
    public func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {}
    public func session(_ session: Session, task: SessionTask, willPerformHTTPRedirection response: Response, newRequest request: Request) async -> Request? { request }
    public func session(_ session: Session, task: SessionTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeAnswer { .performDefaultHandling }
    public func session(_ session: Session, didReceive challenge: ConnectionChallenge) async -> ConnectionChallengeAnswer { .performDefaultHandling }
    public var evaluatesServerTrust: Bool { false }
    public func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {}
    public func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {}
    public func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask) async {}
    public func session(_ session: Session, didBecomeInvalidWithError error: FerryError?) async {}
    public func sessionDidFinishEvents(forBackgroundSession session: Session) async {}
}

/// Everything a session runs: its delegate queue (callbacks one after another, in the order
/// they were enqueued, never two at once: the `delegateQueue` of URLSession), one task that
/// lives as long as the session, and, beside it, the work that runs concurrently (in-process
/// transfers, the background event router, upload discards, stream pumps), each in a task of
/// its own. `resume()` and the other calls that start work are synchronous and have no task
/// to be a child of; a piece of work is stopped by cancelling its task.
/// Invalidation ends the queue once its jobs ran, and refuses new work.
final class DelegateQueue: Sendable {
    typealias Job = @Sendable () async -> Void
    private let continuation: AsyncStream<Job>.Continuation
    private let acceptsWork = Mutex(true)

    /// `executor`: where the queue's jobs run (nil: Swift's global pool). A URLSession's own
    /// `delegateQueue` lends its dispatch queue, so that a job and the delegate calls it makes
    /// there take turns on one thread instead of waking another for each call.
    init(executor: (any TaskExecutor)? = nil) {
        let (stream, continuation) = AsyncStream<Job>.makeStream()
        self.continuation = continuation
        Task(executorPreference: executor) {
            for await job in stream { await job() }
        }
    }

    /// Runs `job` beside the delegate queue, in a task of its own started now, and returns
    /// that task; nil when the session is gone (the job does not run).
    @discardableResult
    func spawn(_ job: @escaping Job) -> Task<Void, Never>? {
        guard acceptsWork.withLock({ $0 }) else { return nil }
        return Task { await job() }
    }

    /// Queues `job` after the callbacks queued before it. False when the queue has ended (the
    /// session is invalid): the job does not run.
    @discardableResult
    func enqueue(_ job: @escaping Job) -> Bool {
        if case .terminated = continuation.yield(job) { return false }
        return true
    }

    /// Enqueues `job` and waits for its answer.
    func ask<T: Sendable>(_ job: @escaping @Sendable () async -> T) async -> T {
        let queued: T? = await withCheckedContinuation { (answer: CheckedContinuation<T?, Never>) in
            if !enqueue({ answer.resume(returning: await job()) }) {
                answer.resume(returning: nil)  // the session is gone: nobody runs queued jobs
            }
        }
        if let queued { return queued }
        return await job()
    }

    /// No more callbacks or work: the queue ends once its jobs ran; work that runs goes on.
    func finish() {
        continuation.finish()
        acceptsWork.withLock { $0 = false }
    }
}

/// Runs Swift jobs on a serial dispatch queue: the one under a URLSession's own
/// `delegateQueue` (``DelegateQueue/init(executor:)``).
final class DispatchQueueExecutor: TaskExecutor {
    let queue: DispatchQueue

    init(_ queue: DispatchQueue) { self.queue = queue }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
