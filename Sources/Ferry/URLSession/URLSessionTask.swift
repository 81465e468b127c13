public import Foundation
import NIOConcurrencyHelpers

/// A task in URLSession's spelling. It is a view of Ferry's ``SessionTask`` (``task``): one
/// transfer, two spellings. Tasks are equal only to themselves, so they can be dictionary keys
/// (`[URLSessionTask: Data]`, the samples' way of keeping each upload's answer), and a
/// session's delegate always gets the same object for the same task.
open class URLSessionTask: Hashable, @unchecked Sendable, CustomStringConvertible {  // `delegate` is behind the task's lock
    /// The states of a task.
    public enum State: Int, Sendable {
        case running = 0, suspended = 1, canceling = 2, completed = 3
    }

    /// Ferry's task this is the spelling of.
    public let task: SessionTask
    private let perTaskDelegate = NIOLockedValueBox<(any URLSessionTaskDelegate)?>(nil)

    init(_ task: SessionTask) {
        self.task = task
    }

    public var taskIdentifier: Int { task.taskIdentifier }
    public var originalRequest: URLRequest? { URLRequest(task.originalRequest) }
    public var currentRequest: URLRequest? { task.currentRequest.map(URLRequest.init) }
    /// An ``HTTPURLResponse`` once the response head arrived.
    public var response: URLResponse? { task.response.map(HTTPURLResponse.init) }
    /// A ``URLError`` once the task failed.
    public var error: Error? { task.error.map(URLError.init) }
    public var state: State {
        switch task.state {
        case .running: .running
        case .suspended: .suspended
        case .canceling: .canceling
        case .completed: .completed
        }
    }
    public var taskDescription: String? {
        get { task.taskDescription }
        set { task.taskDescription = newValue }
    }
    public var priority: Float {
        get { task.priority }
        set { task.priority = newValue }
    }
    public var earliestBeginDate: Date? {
        get { task.earliestBeginDate }
        set { task.earliestBeginDate = newValue }
    }
    public var countOfBytesSent: Int64 { task.countOfBytesSent }
    public var countOfBytesExpectedToSend: Int64 { task.countOfBytesExpectedToSend }
    public var countOfBytesReceived: Int64 { task.countOfBytesReceived }
    public var countOfBytesExpectedToReceive: Int64 { task.countOfBytesExpectedToReceive }

    /// A delegate for this task only: its calls go here instead of to the session's delegate.
    public var delegate: (any URLSessionTaskDelegate)? {
        get { perTaskDelegate.withLockedValue { $0 } }
        set { perTaskDelegate.withLockedValue { $0 = newValue } }
    }

    open func resume() { task.resume() }
    open func suspend() { task.suspend() }
    open func cancel() { task.cancel() }

    public static let defaultPriority: Float = 0.5
    public static let lowPriority: Float = 0.25
    public static let highPriority: Float = 0.75

    public static func == (lhs: URLSessionTask, rhs: URLSessionTask) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    open var description: String { "<\(type(of: self)) \(taskIdentifier) \(state)>" }
}

/// A data task: the body arrives in memory.
open class URLSessionDataTask: URLSessionTask, @unchecked Sendable {}

/// An upload task: a data task with a body to send.
open class URLSessionUploadTask: URLSessionDataTask, @unchecked Sendable {}

/// A download task: the body goes to a file.
open class URLSessionDownloadTask: URLSessionTask, @unchecked Sendable {
    /// Cancels the download and gives what continues it (`downloadTask(withResumeData:)`), or
    /// nil when it cannot continue.
    open func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        guard let download = task as? DownloadTask else { return completionHandler(nil) }
        Task { completionHandler(await download.cancelByProducingResumeData()) }
    }

    /// The async form of ``cancel(byProducingResumeData:)``.
    open func cancelByProducingResumeData() async -> Data? {
        await (task as? DownloadTask)?.cancelByProducingResumeData()
    }
}
