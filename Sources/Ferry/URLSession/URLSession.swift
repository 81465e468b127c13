public import Foundation
import NIOConcurrencyHelpers
import Logging

/// URLSession's spelling of a ``Session``, so code written for Apple's platforms runs on Ferry
/// with its imports changed (`import Foundation` and `import Ferry`, no FoundationNetworking):
///
/// ```swift
/// let session = URLSession(configuration: .default, delegate: nil, delegateQueue: nil)
/// session.dataTask(with: URL(string: "https://example.com/notes.json")!) { data, response, error in
///     guard let http = response as? HTTPURLResponse, http.statusCode == 200, let data else { return }
///     print(String(decoding: data, as: UTF8.self))
/// }.resume()
/// ```
///
/// One implementation, two spellings: this class is a view of ``session``, its tasks views of
/// Ferry's tasks, its delegate called through Ferry's ``SessionDelegate``. Where Ferry differs
/// from the platform is docs/porting.md.
open class URLSession: @unchecked Sendable {  // every stored property is immutable or behind a lock
    /// What a data delegate does with a response.
    public enum ResponseDisposition: Int, Sendable {
        case cancel = 0, allow = 1, becomeDownload = 2, becomeStream = 3
    }
    /// The body of ``bytes(for:delegate:)``, read at the consumer's pace.
    public typealias AsyncBytes = ResponseBytes

    /// A session with the default configuration and no delegate.
    public static let shared = URLSession(configuration: .default)

    /// Ferry's session this is the spelling of.
    public let session: Session
    /// A copy of the configuration the session was made with.
    public let configuration: URLSessionConfiguration
    public let delegate: (any URLSessionDelegate)?
    /// Where the delegate and the completion handlers are called: serial unless you give another.
    public let delegateQueue: OperationQueue
    /// The URLSession view of each task not yet completed, by identifier: one object per task.
    private let views = NIOLockedValueBox<[Int: URLSessionTask]>([:])

    public convenience init(configuration: URLSessionConfiguration) {
        self.init(configuration: configuration, delegate: nil, delegateQueue: nil)
    }

    public init(configuration: URLSessionConfiguration, delegate: (any URLSessionDelegate)?, delegateQueue queue: OperationQueue?) {
        self.configuration = configuration.copy()
        self.delegate = delegate
        var executor: DispatchQueueExecutor?
        if let queue {
            delegateQueue = queue
        } else {
            delegateQueue = OperationQueue()
            delegateQueue.maxConcurrentOperationCount = 1
            // Its own dispatch queue, which the session's callback jobs run on too: each
            // delegate call is then a turn on the same thread, not a wake-up of another.
            let dispatch = DispatchQueue(label: "ferry.urlsession.delegate")
            delegateQueue.underlyingQueue = dispatch
            executor = DispatchQueueExecutor(dispatch)
        }
        let bridge = DelegateBridge()
        session = Session(configuration: self.configuration.configuration, delegate: bridge, logger: Logger(label: Session.loggerLabel),
                          delegateExecutor: executor)
        // The bridge holds this session until it is invalidated, as the platform holds a session
        // and its delegate until then.
        bridge.owner.set(self)
    }

    public var sessionDescription: String? {
        get { session.sessionDescription }
        set { session.sessionDescription = newValue }
    }

    // MARK: Tasks

    open func dataTask(with request: URLRequest) -> URLSessionDataTask {
        view(session.dataTask(with: Self.ferryRequest(request)))
    }

    open func dataTask(with url: URL) -> URLSessionDataTask { dataTask(with: URLRequest(url: url)) }

    open func dataTask(with request: URLRequest, completionHandler: @escaping @Sendable (Data?, URLResponse?, Error?) -> Void) -> URLSessionDataTask {
        view(session.dataTask(with: Self.ferryRequest(request), completionHandler: collecting(completionHandler)))
    }

    open func dataTask(with url: URL, completionHandler: @escaping @Sendable (Data?, URLResponse?, Error?) -> Void) -> URLSessionDataTask {
        dataTask(with: URLRequest(url: url), completionHandler: completionHandler)
    }

    open func uploadTask(with request: URLRequest, from bodyData: Data) -> URLSessionUploadTask {
        view(session.uploadTask(with: Self.ferryRequest(request), from: bodyData))
    }

    open func uploadTask(with request: URLRequest, fromFile fileURL: URL) -> URLSessionUploadTask {
        view(session.uploadTask(with: Self.ferryRequest(request), fromFile: fileURL))
    }

    open func uploadTask(with request: URLRequest, from bodyData: Data?,
                         completionHandler: @escaping @Sendable (Data?, URLResponse?, Error?) -> Void) -> URLSessionUploadTask {
        view(session.uploadTask(with: Self.ferryRequest(request), body: .data(bodyData ?? Data()), completionHandler: collecting(completionHandler)))
    }

    open func uploadTask(with request: URLRequest, fromFile fileURL: URL,
                         completionHandler: @escaping @Sendable (Data?, URLResponse?, Error?) -> Void) -> URLSessionUploadTask {
        view(session.uploadTask(with: Self.ferryRequest(request), body: .file(fileURL), completionHandler: collecting(completionHandler)))
    }

    open func downloadTask(with request: URLRequest) -> URLSessionDownloadTask {
        view(session.downloadTask(with: Self.ferryRequest(request)))
    }

    open func downloadTask(with url: URL) -> URLSessionDownloadTask { downloadTask(with: URLRequest(url: url)) }

    open func downloadTask(withResumeData resumeData: Data) -> URLSessionDownloadTask {
        view(session.downloadTask(withResumeData: resumeData))
    }

    /// The handler gets the file's location: move it before returning, it is deleted after.
    open func downloadTask(with request: URLRequest, completionHandler: @escaping @Sendable (URL?, URLResponse?, Error?) -> Void) -> URLSessionDownloadTask {
        let queue = delegateQueue
        return view(session.downloadTask(with: Self.ferryRequest(request)) { location, response, error in
            await Self.run(on: queue) { completionHandler(location, response.map(HTTPURLResponse.init), error.map(URLError.init)) }
        })
    }

    open func downloadTask(with url: URL, completionHandler: @escaping @Sendable (URL?, URLResponse?, Error?) -> Void) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url), completionHandler: completionHandler)
    }

    // MARK: The session

    open func finishTasksAndInvalidate() { session.finishTasksAndInvalidate() }
    open func invalidateAndCancel() { session.invalidateAndCancel() }

    /// Empties the session's cookie storage (Ferry keeps no cache or credentials yet).
    open func reset(completionHandler: @escaping @Sendable () -> Void) {
        session.configuration.httpCookieStorage?.removeCookies(since: .distantPast)
        delegateQueue.addOperation(completionHandler)
    }
    /// Cookies are written as they change: there is nothing to flush.
    open func flush(completionHandler: @escaping @Sendable () -> Void) { delegateQueue.addOperation(completionHandler) }

    /// Tasks not yet completed (in a relaunched process: the background session's tasks ferryd still has).
    open var allTasks: [URLSessionTask] {
        get async { openTasks }
    }

    open func getAllTasks(completionHandler: @escaping @Sendable ([URLSessionTask]) -> Void) {
        let tasks = openTasks
        delegateQueue.addOperation { completionHandler(tasks) }
    }

    open func getTasksWithCompletionHandler(
        _ completionHandler: @escaping @Sendable ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask]) -> Void
    ) {
        let tasks = openTasks
        let uploads = tasks.compactMap { $0 as? URLSessionUploadTask }
        let data = tasks.compactMap { $0 as? URLSessionDataTask }.filter { !($0 is URLSessionUploadTask) }
        let downloads = tasks.compactMap { $0 as? URLSessionDownloadTask }
        delegateQueue.addOperation { completionHandler(data, uploads, downloads) }
    }

    // MARK: Internals

    /// The tasks not completed (one that just completed may still be in the session's list
    /// while its last callbacks run).
    private var openTasks: [URLSessionTask] { session.allTasks.filter { $0.state != .completed }.map(view) }

    /// The one URLSession view of `task`, made the first time it is asked for.
    func view<T: URLSessionTask>(_ task: SessionTask) -> T {
        // Every caller asks for the class that matches the task's kind.
        view(task) as! T
    }

    func view(_ task: SessionTask) -> URLSessionTask {
        views.withLockedValue { views in
            if let existing = views[task.taskIdentifier], existing.task === task { return existing }
            let made: URLSessionTask = switch task {
            case is UploadTask: URLSessionUploadTask(task)
            case is DataTask: URLSessionDataTask(task)
            default: URLSessionDownloadTask(task)
            }
            views[task.taskIdentifier] = made
            return made
        }
    }

    /// Forgets a completed task's view (after its last callback).
    func forget(_ task: SessionTask) {
        _ = views.withLockedValue { $0.removeValue(forKey: task.taskIdentifier) }
    }

    /// Ferry's request for `request`; one without a URL fails as the platform's does (`badURL`).
    static func ferryRequest(_ request: URLRequest) -> Request {
        request.request ?? Request(url: URL(string: "about:missing-url")!)
    }

    /// A Ferry completion handler that calls `handler` on the delegate queue in URLSession's types.
    private func collecting(_ handler: @escaping @Sendable (Data?, URLResponse?, Error?) -> Void) -> @Sendable (Data?, Response?, FerryError?) async -> Void {
        let queue = delegateQueue
        return { data, response, error in
            await Self.run(on: queue) { handler(data, response.map(HTTPURLResponse.init), error.map(URLError.init)) }
        }
    }

    /// Runs `work` on `queue` and returns when it has run (so the callbacks keep their order).
    static func run(on queue: OperationQueue, _ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.addOperation {
                work()
                continuation.resume()
            }
        }
    }
}
