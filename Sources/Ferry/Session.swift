public import FerryEngine
public import Foundation
public import Logging
import NIOConcurrencyHelpers

/// Runs tasks: the `URLSession` of Ferry, for sessions that live in the app's process.
///
/// ```swift
/// let session = Session(configuration: .default, delegate: myDelegate)
/// let task = session.uploadTask(with: request, fromFile: URL(fileURLWithPath: "photo.jpg"))
/// task.resume()
/// ```
///
/// Delegate callbacks run one at a time on the session's own serial queue. The session
/// holds its delegate strongly until it is invalidated, as URLSession does.
public final class Session: Sendable {
    /// A shared session with the default configuration and no delegate.
    public static let shared = Session(configuration: .default)

    public let configuration: Configuration
    public let delegate: (any SessionDelegate)?
    /// The configuration's proxies, the environment read once.
    let proxies: ProxySettings
    /// Where the tasks run: this process's engine, or ferryd.
    let runner: any TaskRunner
    /// Background sessions: the tie to ferryd (its events, its tasks, its errors).
    let background: BackgroundLink?
    let delegateQueue: DelegateQueue
    /// The delegate's answers to questions about connections (nil without a delegate).
    let connectionChallenges: SessionChallenges?
    /// The path of this session's download files up to their number (see `newDownloadFile`).
    private let downloadFilePrefix: String
    private let downloadFileCounter = NIOLockedValueBox(0)
    let logger: Logger
    /// Set on `finishTasksAndInvalidate`, `invalidateAndCancel`.
    public var sessionDescription: String? {
        get { state.withLockedValue { $0.description } }
        set { state.withLockedValue { $0.description = newValue } }
    }

    private struct State {
        var nextIdentifier = 1
        var tasks: [Int: SessionTask] = [:]
        var invalidating = false
        var invalidated = false
        var description: String?
        /// ferryd task → local tasks submitted again with its idempotency key.
        var aliases: [Int: [SessionTask]] = [:]
        /// Background tasks that ended in this process, until ferryd has their end: a
        /// reconnect must not mirror them again.
        var ended = EndedTasks()
    }
    private let state = NIOLockedValueBox(State())

    /// The label of a session's logger when the app gives none.
    @usableFromInline static let loggerLabel = "ferry.session"

    public convenience init(configuration: Configuration = .default, delegate: (any SessionDelegate)? = nil, logger: Logger = Logger(label: Session.loggerLabel)) {
        self.init(configuration: configuration, delegate: delegate, logger: logger, delegateExecutor: nil)
    }

    /// `delegateExecutor`: where the delegate queue's jobs run (a URLSession's own queue).
    init(configuration: Configuration, delegate: (any SessionDelegate)?, logger: Logger, delegateExecutor: (any TaskExecutor)?) {
        self.configuration = configuration
        self.delegateQueue = DelegateQueue(executor: delegateExecutor)
        downloadFilePrefix = configuration.downloadDirectory.path + "/ferry-\(getpid())-"
            + String(UInt64.random(in: 0...UInt64.max), radix: 36) + "-"
        self.delegate = delegate
        self.logger = logger
        self.proxies = configuration.resolvedProxies
        let challenges = delegate.map { _ in SessionChallenges() }
        self.connectionChallenges = challenges
        if let refusal = configuration.backgroundRefusal {
            // Its tasks fail with the reason when resumed (Session.background throws it).
            background = nil
            runner = UnavailableRunner(error: refusal)
        } else if configuration.isBackground {
            let link = BackgroundLink(configuration: configuration, logger: logger)
            background = link
            runner = BackgroundRunner(link: link)
            connectBackground(link)
        } else {
            background = nil
            runner = Self.inProcessRunner(configuration, logger: logger)
        }
        challenges?.serve(self)
    }

    /// The engine for an in-process session. A client identity that cannot be read fails every
    /// task with the reason (presenting none would hide the mistake). Any other TLS setup
    /// failure: say so and use the system store; should even that fail, every task fails.
    private static func inProcessRunner(_ configuration: Configuration, logger: Logger) -> any TaskRunner {
        do {
            return InProcessRunner(
                engine: try TransferEngine(configuration: configuration.engineConfiguration, logger: logger),
                connectivity: configuration.connectivityRequirement)
        } catch let error as FerryError {
            logger.error("the client identity cannot be read: every task fails", metadata: ["error": "\(error)"])
            return UnavailableRunner(error: error)
        } catch {
            logger.error("TLS configuration failed, using the system trust store only", metadata: ["error": "\(error)"])
        }
        var fallback = configuration.engineConfiguration
        fallback.additionalTrustedCertificateFiles = []
        do {
            return InProcessRunner(engine: try TransferEngine(configuration: fallback, logger: logger), connectivity: configuration.connectivityRequirement)
        } catch {
            return UnavailableRunner(error: FerryError(.secureConnectionFailed, "cannot set up TLS: \(error)", underlying: error))
        }
    }

    // MARK: Making tasks (all suspended)

    public func dataTask(with request: Request) -> DataTask {
        register { DataTask(session: self, identifier: $0, request: request, completionHandler: nil) }
    }

    public func dataTask(with url: URL) -> DataTask { dataTask(with: Request(url: url)) }

    /// The completion handler gets the whole body (bounded by `maximumDataTaskBodySize`).
    public func dataTask(with request: Request, completionHandler: @escaping @Sendable (Data?, Response?, FerryError?) async -> Void) -> DataTask {
        register { DataTask(session: self, identifier: $0, request: request, completionHandler: completionHandler) }
    }

    public func uploadTask(with request: Request, from data: Data) -> UploadTask {
        uploadTask(with: request, body: .data(data), completionHandler: nil)
    }

    public func uploadTask(with request: Request, fromFile file: URL) -> UploadTask {
        uploadTask(with: request, body: .file(file), completionHandler: nil)
    }

    /// An upload from any ``UploadBody``, e.g. `.stream(length:_:)`.
    public func uploadTask(
        with request: Request, body: UploadBody,
        completionHandler: (@Sendable (Data?, Response?, FerryError?) async -> Void)? = nil
    ) -> UploadTask {
        register { UploadTask(session: self, identifier: $0, request: request, body: body, completionHandler: completionHandler) }
    }

    public func downloadTask(with request: Request) -> DownloadTask {
        register { DownloadTask(session: self, identifier: $0, request: request, partialFile: self.newDownloadFile(), validator: nil) }
    }

    public func downloadTask(with url: URL) -> DownloadTask { downloadTask(with: Request(url: url)) }

    /// The completion handler gets the file's location; move it before returning.
    public func downloadTask(with request: Request, completionHandler: @escaping @Sendable (URL?, Response?, FerryError?) async -> Void) -> DownloadTask {
        register {
            DownloadTask(session: self, identifier: $0, request: request, partialFile: self.newDownloadFile(), validator: nil, completionHandler: completionHandler)
        }
    }

    /// Continues a download from resume data. Damaged or foreign data gives a task that
    /// fails with ``FerryError/Code/cannotDecodeResumeData`` when resumed.
    public func downloadTask(withResumeData resumeData: Data) -> DownloadTask {
        makeResumedDownload(resumeData, handsFileToCaller: false)
    }

    func makeResumedDownload(_ resumeData: Data, handsFileToCaller: Bool) -> DownloadTask {
        do {
            let decoded = try DownloadResumeData.decode(resumeData)
            let file = URL(fileURLWithPath: decoded.partialFile)
            // The partial file may be gone (cleaned temp dir): then start over, not fail.
            let validator = FileManager.default.fileExists(atPath: file.path) ? decoded.validator : nil
            if validator == nil { logger.notice("partial download file is gone; starting over", metadata: ["file": "\(file.path)"]) }
            // A background session hands the blob to ferryd as it is (one format for both).
            let forDaemon = configuration.isBackground ? resumeData : nil
            return register {
                DownloadTask(session: self, identifier: $0, request: decoded.request, partialFile: file, validator: validator,
                             handsFileToCaller: handsFileToCaller, backgroundResumeData: forDaemon)
            }
        } catch {
            let failure = FerryError.from(error, url: URL(fileURLWithPath: "/"))
            return register {
                DownloadTask(session: self, identifier: $0, request: Request(url: URL(string: "about:resume-data")!), partialFile: self.newDownloadFile(),
                             validator: nil, resumeDataError: failure, handsFileToCaller: handsFileToCaller)
            }
        }
    }

    // MARK: Session-wide

    /// Tasks not yet completed.
    public var allTasks: [SessionTask] {
        state.withLockedValue { $0.tasks.values.sorted { $0.taskIdentifier < $1.taskIdentifier } }
    }

    /// Lets running tasks finish, refuses new ones, then tells the delegate and closes the pool.
    public func finishTasksAndInvalidate() {
        // Background tasks go on in ferryd; their events wait for the next process (or launch the app).
        let scope = runner.invalidate(cancellingTasks: false)
        let idle = state.withLockedValue { s -> Bool in
            s.invalidating = true
            return scope == .tasksGoOnElsewhere || s.tasks.isEmpty
        }
        if idle { becomeInvalid() }
    }

    /// Cancels every task, then invalidates.
    public func invalidateAndCancel() {
        let scope = runner.invalidate(cancellingTasks: true)
        let tasks = state.withLockedValue { s -> [SessionTask] in
            s.invalidating = true
            return Array(s.tasks.values)
        }
        guard scope == .tasksEndHere else { return becomeInvalid() }  // ferryd cancelled them
        for task in tasks { task.cancel() }
        if tasks.isEmpty { becomeInvalid() }
    }

    // MARK: Internals

    func register<T: SessionTask>(_ make: (Int) -> T) -> T {
        // A background task's identifier is ferryd's, so a relaunched process finds it again.
        var reserved: Int?
        var reservationFailure: FerryError?
        if !state.withLockedValue({ $0.invalidating }) {
            do { reserved = try runner.reserveTaskIdentifier() } catch { reservationFailure = error }
        }
        let (task, refused) = state.withLockedValue { s -> (T, Bool) in
            let task = make(reserved ?? s.nextIdentifier)
            s.nextIdentifier = max(s.nextIdentifier, task.taskIdentifier) + 1
            if !s.invalidating { s.tasks[task.taskIdentifier] = task }
            return (task, s.invalidating)
        }
        if refused {
            task.finish(error: FerryError(.cancelled, "the session was invalidated; create a new one", url: task.originalRequest.url), generation: nil)
        } else if let reservationFailure {
            task.failOnResume(reservationFailure)
        }
        return task
    }

    /// Adds a task made elsewhere (one ferryd already has) under its own identifier.
    func adopt(_ task: SessionTask) {
        state.withLockedValue { s in
            guard s.tasks[task.taskIdentifier] == nil, !s.ended.contains(task.taskIdentifier) else { return }
            s.tasks[task.taskIdentifier] = task
            s.nextIdentifier = max(s.nextIdentifier, task.taskIdentifier + 1)
        }
    }

    /// The tasks that stand for ferryd's task `identifier`: its own object, and any task
    /// submitted again with the same idempotency key (ferryd kept the first; both hear of it).
    func backgroundTasks(_ identifier: Int) -> [SessionTask] {
        state.withLockedValue { s in
            (s.tasks[identifier].map { [$0] } ?? []) + (s.aliases[identifier] ?? []).filter { s.tasks[$0.taskIdentifier] != nil }
        }
    }

    /// `task` was submitted with a key ferryd already had for task `existing`.
    func alias(_ task: SessionTask, to existing: Int) {
        state.withLockedValue { $0.aliases[existing, default: []].append(task) }
    }

    func taskDidComplete(_ task: SessionTask) {
        // Only a task ferryd has under its own number can be listed again by a reconnect (not
        // one refused, never resumed, or standing for another with the same idempotency key).
        let remember = configuration.isBackground && task.lock.withLockedValue { $0.isInDaemon }
        let nowIdle = state.withLockedValue { s -> Bool in
            s.tasks[task.taskIdentifier] = nil
            if remember { s.ended.ended(task.taskIdentifier) }
            // A task that stood for another (the same idempotency key) is done standing for it:
            // the list held it, its body and its session for the session's life.
            if !s.aliases.isEmpty {
                for (existing, tasks) in s.aliases where tasks.contains(where: { $0 === task }) {
                    let left = tasks.filter { $0 !== task }
                    s.aliases[existing] = left.isEmpty ? nil : left
                }
            }
            return s.invalidating && s.tasks.isEmpty
        }
        if nowIdle { becomeInvalid() }
    }

    /// Event `sequence`, which ends ferryd's task `identifier`, was delivered here.
    func backgroundTask(_ identifier: Int, settledBy sequence: Int64) {
        state.withLockedValue { $0.ended.settled(identifier, bySequence: sequence) }
    }

    /// ferryd has the acknowledgement of events up to `sequence`: the tasks they ended are
    /// listed as delivered from now on, and need not be remembered here.
    func backgroundEventsAcknowledged(upTo sequence: Int64) {
        state.withLockedValue { $0.ended.acknowledged(upTo: sequence) }
    }

    /// How many ended tasks the session remembers (``EndedTasks``).
    var endedTaskCount: Int { state.withLockedValue { $0.ended.count } }

    private func becomeInvalid() {
        guard state.withLockedValue({ s in defer { s.invalidated = true }; return !s.invalidated }) else { return }
        delegateQueue.enqueue { [self] in
            await runner.shutdown()
            await delegate?.session(self, didBecomeInvalidWithError: nil)
            delegateQueue.finish()
        }
    }

    /// A fresh name in the download directory: the process, a random tag of this session and
    /// a counter. (Not `UUID()`, which reads `/dev/urandom` each time, and with
    /// `isDirectory: false`, so Foundation does not `stat` the path to guess: both showed up in
    /// profiles of many small downloads.)
    func newDownloadFile() -> URL {
        // Its own lock: tasks are made (and this called) while `state` is held.
        let number = downloadFileCounter.withLockedValue { count in
            count += 1
            return count
        }
        // A path string: Foundation's URL path operations cost more here than the file's write.
        return URL(fileURLWithPath: downloadFilePrefix + "\(number).download", isDirectory: false)
    }

    /// The engine's view of a task's request: session headers added, session limits applied.
    func transfer(for request: Request) -> Transfer {
        var request = request
        for field in configuration.httpAdditionalHeaders where request.headers[field.name] == nil {
            request.headers.add(name: field.name, value: field.value)
        }
        var transfer = Transfer(
            request: request,
            resourceTimeout: configuration.timeoutIntervalForResource,
            idleTimeout: request.timeoutInterval ?? configuration.timeoutIntervalForRequest,
            retry: configuration.retryPolicy,
            resumableUpload: configuration.resumableUploads)
        transfer.cookies = configuration.cookieJar
        transfer.credentials = configuration.urlCredentialStorage
        transfer.connectionChallenges = connectionChallenges
        transfer.proxies = proxies
        transfer.cache = configuration.urlCache
        transfer.cacheUse = request.cacheUse ?? configuration.requestCachePolicy
        return transfer
    }
}
