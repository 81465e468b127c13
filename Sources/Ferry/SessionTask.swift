public import FerryEngine
import FerryCore
public import FerryProtocol
public import Foundation
import Logging
import NIOConcurrencyHelpers

/// A transfer in a ``Session``: created suspended, started with ``resume()``.
///
/// ```swift
/// let task = session.downloadTask(with: URL(string: "http://127.0.0.1:8080/big.iso")!)
/// task.taskDescription = "ISO image"
/// task.resume()
/// for await event in task.events {
///     if case .wroteData(_, let total, let expected) = event { print(total, "/", expected) }
/// }
/// ```
public class SessionTask: @unchecked Sendable {  // all mutable state is behind `lock`
    /// The states of URLSessionTask.
    public enum State: Sendable, Equatable {
        case running, suspended, canceling, completed
    }

    /// Unique within its session.
    public let taskIdentifier: Int
    public let originalRequest: Request
    /// Strong, as in URLSession: a running task keeps its session alive.
    let session: Session

    struct Mutable {
        /// Where the task is in its life: every flag about it lives in this value.
        var lifecycle = TaskLifecycle()
        /// Stops the in-process runner's transfer run, while one is in progress.
        var run: RunHandle?
        var currentRequest: Request?
        var response: Response?
        var error: FerryError?
        var taskDescription: String?
        var countOfBytesSent: Int64 = 0
        var countOfBytesExpectedToSend: Int64 = 0
        var countOfBytesReceived: Int64 = 0
        var countOfBytesExpectedToReceive: Int64 = -1
        var eventContinuations: [AsyncStream<TaskEvent>.Continuation] = []
        var completionWaiters: [CheckedContinuation<Void, Never>] = []
        var priority: Float = 0.5
        var earliestBeginDate: Date?
        var idempotencyKey: String?
        /// The server's resumable upload resource for this task's body: a suspended upload
        /// continues from the server's offset, a cancelled one is deleted there.
        var uploadPoint: ResumableUploadPoint?
        /// Background tasks: why ferryd holds the task, as it last said.
        var waitingReason: WaitingReason?
        /// Background tasks: ferryd has this task under this task's own number (submitted as
        /// new, or mirrored from ferryd's list): its end is remembered until acknowledged.
        var isInDaemon = false
        /// For the task's metrics: when it was first resumed, and each request it made.
        var firstResumed: Date?
        var transactions: [TransactionMetrics] = []
        /// Whether ``progress`` was asked for: until then nobody can see it, and it is not updated.
        var progressHandedOut = false
    }
    let lock = NIOLockedValueBox(Mutable())

    /// How far the task is, as a Foundation `Progress`: bytes sent for an upload, received
    /// otherwise (indeterminate until the size is known), complete when the task succeeds. Its
    /// `cancel()`, `pause()` and `resume()` cancel, suspend and resume the task, so it can drive
    /// a progress bar or be a child of the app's own `Progress`. Foundation's `Progress` has no
    /// lock on Linux: Ferry changes every task's progress on one serial queue
    /// (``progressQueue``); read it, or add it to a parent, on that queue too.
    ///
    /// ```swift
    /// let task = session.downloadTask(with: url)
    /// overall.addChild(task.progress, withPendingUnitCount: 1)
    /// task.resume()
    /// ```
    public var progress: Progress {
        let firstLook = lock.withLockedValue { m in
            defer { m.progressHandedOut = true }
            return !m.progressHandedOut
        }
        // Until someone holds it nobody can see it, so it was not kept up to date: bring it
        // there before the caller reads it (at once when the caller is on the queue already).
        if firstLook, DispatchQueue.getSpecific(key: Self.onProgressQueue) != nil {
            publishProgress()
        } else if firstLook {
            Self.progressQueue.sync { publishProgress() }
        }
        return unobservedProgress
    }
    /// ``progress`` without handing it out.
    private let unobservedProgress: Progress
    /// Where every task's ``progress`` changes (and its parents with it).
    public static let progressQueue: DispatchQueue = {
        let queue = DispatchQueue(label: "ferry.progress")
        queue.setSpecific(key: onProgressQueue, value: ())
        return queue
    }()
    private static let onProgressQueue = DispatchSpecificKey<Void>()

    init(session: Session, identifier: Int, request: Request) {
        self.session = session
        self.taskIdentifier = identifier
        self.originalRequest = request
        // Discrete: not made a child of whatever Progress is current on this thread.
        let progress = Progress.discreteProgress(totalUnitCount: -1)
        progress.kind = .file
        progress.isCancellable = true
        progress.isPausable = true
        unobservedProgress = progress
        // Weak: the task owns its progress, not the other way round.
        progress.cancellationHandler = { [weak self] in self?.cancel() }
        progress.pausingHandler = { [weak self] in self?.suspend() }
        progress.resumingHandler = { [weak self] in self?.resume() }
    }

    /// Asks for ``progress`` to be brought up to the byte counters (what was sent for an
    /// upload, else received), and to its end once the task succeeded.
    func updateProgress() {
        // A progress nobody was handed is brought up to date when it is (``progress``).
        guard lock.withLockedValue({ $0.progressHandedOut }) else { return }
        ProgressPublisher.shared.needsUpdate(self)
    }

    /// Brings ``progress`` up to date; on ``progressQueue`` only (``ProgressPublisher``).
    func publishProgress() {
        let progress = unobservedProgress
        let (done, total, succeeded) = lock.withLockedValue { m in
            let (done, total) = kind == .upload
                ? (m.countOfBytesSent, m.countOfBytesExpectedToSend) : (m.countOfBytesReceived, m.countOfBytesExpectedToReceive)
            return (done, total, m.lifecycle.state == .completed && m.error == nil)
        }
        // A total below what arrived is not one (a decoded body): leave it indeterminate.
        if total >= done, total > 0, progress.totalUnitCount != total { progress.totalUnitCount = total }
        progress.completedUnitCount = max(progress.completedUnitCount, done)
        if succeeded {
            // Done: whole, even when the size was never known.
            if progress.totalUnitCount < progress.completedUnitCount || progress.totalUnitCount <= 0 {
                progress.totalUnitCount = max(progress.completedUnitCount, 1)
            }
            progress.completedUnitCount = progress.totalUnitCount
        }
    }

    // MARK: Public state

    public var state: State {
        switch lock.withLockedValue({ $0.lifecycle.state }) {
        case .suspended: return .suspended
        case .running: return .running
        case .canceling: return .canceling
        case .completed: return .completed
        }
    }
    /// The request now being sent (after redirects).
    public var currentRequest: Request? { lock.withLockedValue { $0.currentRequest ?? originalRequest } }
    public var response: Response? { lock.withLockedValue { $0.response } }
    public var error: FerryError? { lock.withLockedValue { $0.error } }
    public var taskDescription: String? {
        get { lock.withLockedValue { $0.taskDescription } }
        set { lock.withLockedValue { $0.taskDescription = newValue } }
    }
    /// Relative priority in 0…1 (advisory for in-process sessions).
    public var priority: Float {
        get { lock.withLockedValue { $0.priority } }
        set { lock.withLockedValue { $0.priority = min(max(newValue, 0), 1) } }
    }
    /// Background sessions: ferryd does not start the task before this date.
    public var earliestBeginDate: Date? {
        get { lock.withLockedValue { $0.earliestBeginDate } }
        set { lock.withLockedValue { $0.earliestBeginDate = newValue } }
    }
    /// Background sessions: a key of your choosing. Submitting a task with a key the session
    /// already has (an extension that posts twice, a retry after a lost reply) gives back the
    /// existing task instead of a second transfer. Set it before `resume()`.
    public var idempotencyKey: String? {
        get { lock.withLockedValue { $0.idempotencyKey } }
        set { lock.withLockedValue { $0.idempotencyKey = newValue } }
    }
    /// Background tasks: why ferryd holds the task — no network, backing off until a date, a
    /// host's connection limit, suspended — as ferryd last said (when this process attached, or
    /// when the task started waiting for connectivity); nil once bytes move, and for in-process
    /// tasks. `ferry explain` gives the same.
    ///
    /// ```swift
    /// for task in session.allTasks { print(task.taskIdentifier, task.waitingReason?.message ?? "moving") }
    /// ```
    public var waitingReason: WaitingReason? { lock.withLockedValue { $0.waitingReason } }
    public var countOfBytesSent: Int64 { lock.withLockedValue { $0.countOfBytesSent } }
    public var countOfBytesExpectedToSend: Int64 { lock.withLockedValue { $0.countOfBytesExpectedToSend } }
    public var countOfBytesReceived: Int64 { lock.withLockedValue { $0.countOfBytesReceived } }
    public var countOfBytesExpectedToReceive: Int64 { lock.withLockedValue { $0.countOfBytesExpectedToReceive } }

    /// Background tasks: ferryd says the task waits (`reason`), or that it moves again (nil).
    func noteWaiting(_ reason: WaitingReason?) {
        lock.withLockedValue { $0.waitingReason = reason }
    }

    /// Everything that happens to this task, in order, ending with `.completed`.
    /// Subscribe before `resume()` to see it all; each subscriber gets its own stream.
    public var events: AsyncStream<TaskEvent> {
        let (stream, continuation) = AsyncStream<TaskEvent>.makeStream()
        let done = lock.withLockedValue { m -> Bool in
            if case .completed = m.lifecycle.state, m.run == nil { return true }
            m.eventContinuations.append(continuation)
            return false
        }
        if done {
            continuation.yield(.completed(error))
            continuation.finish()
        }
        return stream
    }

    // MARK: Control

    /// Starts the task, or continues it after ``suspend()``.
    public func resume() {
        switch lock.withLockedValue({ m in
            if m.firstResumed == nil { m.firstResumed = Date() }
            return m.lifecycle.resume()
        }) {
        case .start(let generation, let isFirst): session.runner.start(self, generation: generation, isFirst: isFirst)
        case .fail(let generation, let error): finish(error: error, generation: generation)
        default: break
        }
    }

    /// Pauses the task. A download keeps what it has and continues from there on resume.
    public func suspend() {
        if case .stop = lock.withLockedValue({ $0.lifecycle.suspend() }) { session.runner.suspend(self) }
    }

    /// Cancels the task; it completes with ``FerryError/Code/cancelled``.
    public func cancel() {
        cancel(producingResumeData: false)
    }

    func cancel(producingResumeData: Bool) {
        switch lock.withLockedValue({ $0.lifecycle.cancel(producingResumeData: producingResumeData) }) {
        case .stop: session.runner.cancel(self, running: true)
        case .completeCancelled(wasStarted: true): session.runner.cancel(self, running: false)
        case .completeCancelled(wasStarted: false): finish(error: cancellation(), generation: nil)  // it never ran anywhere
        default: break
        }
    }

    /// How a cancelled task completes (with a download's resume data, when produced).
    func cancellation(resumeData: Data? = nil) -> FerryError {
        FerryError(.cancelled, "the task was cancelled", url: originalRequest.url, resumeData: resumeData)
    }

    /// Waits until the task has completed (successfully or not).
    public func waitUntilCompleted() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = lock.withLockedValue { m -> Bool in
                if case .completed = m.lifecycle.state, m.run == nil { return true }
                m.completionWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: What the runners ask of a task (subclasses answer)

    /// What the task does with its bodies.
    var kind: TaskKind { .data }

    /// The body to upload, for upload tasks.
    var uploadBody: UploadBody? { nil }

    /// Resume data to hand to ferryd as it is (a background download continued from it).
    var daemonResumeData: Data? { nil }

    /// The transfer for an in-process run; subclasses build it.
    func makeTransfer() throws -> Transfer { fatalError("subclass") }

    /// Called on success before completion is reported (download hands over its file).
    func didFinishTransfer(_ result: TransferResult) {}

    /// ferryd finished a download at `location` (a background session's event).
    func fileArrived(at location: URL) async {}

    /// Called after a failure, before completion: a download may attach resume data.
    func errorForFailure(_ error: FerryError) -> FerryError { error }

    /// `resume()` will complete the task with `error` instead of running it.
    func failOnResume(_ error: FerryError) {
        lock.withLockedValue { $0.lifecycle.failOnResume(error) }
    }

    /// The generation of the run now in progress, if any.
    var currentGeneration: Int? { lock.withLockedValue { $0.lifecycle.currentGeneration } }

    /// Whether run `generation` is still the task's (it was not suspended meanwhile).
    func isCurrent(_ generation: Int) -> Bool { lock.withLockedValue { $0.lifecycle.isCurrent(generation) } }

    /// Completes the task: state, delegate, events, waiters — once.
    /// `endedAt`: when the task ended, if not now (a background task's: when ferryd stored
    /// its outcome), the end of its metrics' interval.
    func finish(error: FerryError?, generation: Int?, endedAt: Date? = nil) {
        let proceed = lock.withLockedValue { m -> Bool in
            if let generation {
                guard m.lifecycle.runEnded(generation: generation) else { return false }
            }
            m.error = error
            m.run = nil
            return true
        }
        guard proceed else { return }
        if let error {
            session.logger.debug("task failed", metadata: ["task": "\(taskIdentifier)", "error": "\(error.shortDescription)"])
        }
        if error == nil { updateProgress() }
        guard let delegate = session.delegate else {
            if hasCompletionHandler {
                session.delegateQueue.enqueue { [self] in
                    await completionCallback(error)
                    release(error)
                }
            } else {
                // No code of the app's runs: nothing to order on the delegate queue, and its
                // turn would cost each small transfer a thread hop.
                release(error)
            }
            return
        }
        let metrics = lock.withLockedValue { TaskMetrics(transactions: $0.transactions, start: $0.firstResumed, end: endedAt ?? Date()) }
        session.delegateQueue.enqueue { [self] in
            await delegate.session(session, task: self, didFinishCollecting: metrics)
            await delegate.session(session, task: self, didCompleteWithError: error)
            await completionCallback(error)
            release(error)
        }
    }

    /// The end of a completion, once the app's code (if any) ran: the task's file goes unless
    /// someone keeps it, its events end, its waiters resume, the session forgets it.
    private func release(_ error: FerryError?) {
        completionCleanup(error)
        let (continuations, waiters) = lock.withLockedValue { m in
            defer { m.eventContinuations = []; m.completionWaiters = [] }
            return (m.eventContinuations, m.completionWaiters)
        }
        for continuation in continuations {
            continuation.yield(.completed(error))
            continuation.finish()
        }
        for waiter in waiters { waiter.resume() }
        session.taskDidComplete(self)
    }

    /// Whether the task has a completion handler (the variants that take one say so).
    var hasCompletionHandler: Bool { false }

    /// Calls the completion handler, on the delegate queue (the variants that take one).
    func completionCallback(_ error: FerryError?) async {}

    /// What a task leaves behind when it completes, after its callbacks (a download's file).
    func completionCleanup(_ error: FerryError?) {}

    /// A response head arrived (downloads note its validator).
    func responseArrived(_ response: Response) {}

    /// Body bytes arrived for an in-memory task (completion-handler variants keep them).
    func dataArrived(_ data: Data) async {}

    func emit(_ event: TaskEvent) {
        switch event {
        case .response, .sentBodyData, .receivedData, .wroteData, .resumed: updateProgress()
        default: break
        }
        let continuations = lock.withLockedValue { $0.eventContinuations }
        for continuation in continuations { continuation.yield(event) }
    }
}

/// What happened to a task, for ``SessionTask/events``.
public enum TaskEvent: Sendable {
    case response(Response)
    case redirected(to: Request)
    case sentBodyData(bytes: Int64, total: Int64, expected: Int64)
    case receivedData(Data)
    case wroteData(bytes: Int64, total: Int64, expected: Int64)
    case resumed(atOffset: Int64, expected: Int64)
    case willRetry(after: Duration, reason: String)
    case finishedDownloading(to: URL)
    /// The last event: nil on success.
    case completed(FerryError?)
}

