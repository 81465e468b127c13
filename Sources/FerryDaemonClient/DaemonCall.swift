public import FerryProtocol
public import Foundation
import NIOCore

/// One typed exchange with ferryd: the request, and how its reply is read. The one client
/// layer both of ferryd's clients use — a background `Session` (synchronously, through
/// ``DaemonConnection/perform(waiting:)``) and the `ferry` CLI (asynchronously, through
/// ``DaemonConnection/perform(_:)``) — so each request is built and each reply checked once.
///
/// ```swift
/// let submitted = try await connection.perform(.submit(submission))
/// let task = try connection.perform(waiting: .control(.suspend, reference))
/// ```
public struct DaemonCall<Result: Sendable>: Sendable {
    public let request: FerryProtocol.Request
    let read: @Sendable (Reply) throws(DaemonConnectionError) -> Result

    init(_ request: FerryProtocol.Request, read: @escaping @Sendable (Reply) throws(DaemonConnectionError) -> Result) {
        self.request = request
        self.read = read
    }

    /// A call whose reply must be of one kind; `expected` picks the value out of it.
    init(_ request: FerryProtocol.Request, expecting expected: @escaping @Sendable (Reply) -> Result?) {
        self.init(request) { reply throws(DaemonConnectionError) in
            guard let value = expected(reply) else { throw .connectionLost("ferryd answered \(request.typeName) with something else") }
            return value
        }
    }
}

extension DaemonCall where Result == Attached {
    /// Attaches to a session: as its owner (to submit and change tasks) or as a watcher.
    public static func attach(_ attach: AttachSession) -> Self {
        let request = FerryProtocol.Request.attach(attach)
        return Self(request, expecting: { if case .attached(let attached) = $0 { attached } else { nil } })
    }
}

extension DaemonCall where Result == Submitted {
    /// Stores a task in ferryd (answered once it is on disk).
    public static func submit(_ submission: TaskSubmission) -> Self {
        let request = FerryProtocol.Request.submit(submission)
        return Self(request, expecting: { if case .submitted(let submitted) = $0 { submitted } else { nil } })
    }
}

/// What a task control asks of ferryd.
public enum TaskControl: Sendable {
    case suspend, resume, cancel, cancelProducingResumeData
}

extension DaemonCall where Result == ControlledTask {
    /// Suspends, resumes or cancels one task of an attached session.
    public static func control(_ control: TaskControl, _ task: TaskReference) -> Self {
        let request: FerryProtocol.Request = switch control {
        case .suspend: .suspend(task)
        case .resume: .resume(task)
        case .cancel: .cancel(task)
        case .cancelProducingResumeData: .cancelProducingResumeData(task)
        }
        return Self(request, expecting: { reply in
            switch reply {
            case .task(let info): ControlledTask(task: info, resumeData: nil)
            case .resumeData(let cancelled): ControlledTask(task: cancelled.task, resumeData: cancelled.resumeData)
            default: nil
            }
        })
    }
}

/// A task after a control: as ferryd reports it (when it does), and a cancelled download's
/// resume data.
public struct ControlledTask: Sendable {
    public var task: TaskInfo?
    public var resumeData: Data?
}

extension DaemonCall where Result == Int {
    /// Identifiers for the session's next `count` tasks, kept for them (a relaunched app finds
    /// them): the first; the others follow it.
    public static func reserveTaskIdentifier(in session: String, count: Int = 1) -> Self {
        let request = FerryProtocol.Request.reserveTaskIdentifier(
            TaskIdentifierReservation(sessionIdentifier: session, count: count == 1 ? nil : count))
        return Self(request, expecting: { if case .taskIdentifier(let identifier) = $0 { identifier } else { nil } })
    }
}

extension DaemonCall where Result == [SessionInfo] {
    /// Every session ferryd has.
    public static var sessions: Self {
        Self(.listSessions, expecting: { if case .sessions(let sessions) = $0 { sessions } else { nil } })
    }
}

extension DaemonCall where Result == TaskPage {
    /// One page of a session's tasks (at most `limit`, after `after`).
    public static func tasks(of session: String, after: Int? = nil, limit: Int? = nil) -> Self {
        let request = FerryProtocol.Request.listTasks(ListTasks(sessionIdentifier: session, afterTaskIdentifier: after, limit: limit))
        return Self(request, expecting: { if case .tasks(let page) = $0 { page } else { nil } })
    }
}

extension DaemonCall where Result == DaemonStatus {
    /// ferryd's version, pid, counts.
    public static var status: Self {
        Self(.status, expecting: { if case .status(let status) = $0 { status } else { nil } })
    }
}

extension DaemonCall where Result == String {
    /// ferryd's figures as Prometheus text.
    public static var metrics: Self {
        Self(.metrics, expecting: { if case .metrics(let text) = $0 { text } else { nil } })
    }
}

extension DaemonCall where Result == Void {
    /// Asks ferryd to stop gracefully.
    public static var stop: Self {
        Self(.stop) { _ throws(DaemonConnectionError) in }
    }

    /// The owner has seen the session's events up to a sequence (and these single ones).
    public static func acknowledge(_ acknowledge: Acknowledge) -> Self {
        Self(.acknowledge(acknowledge)) { _ throws(DaemonConnectionError) in }
    }

    /// The owner is done with the session; with `cancelTasks`, ferryd cancels its tasks.
    public static func invalidate(_ invalidate: Invalidate) -> Self {
        Self(.invalidate(invalidate)) { _ throws(DaemonConnectionError) in }
    }
}

/// A session's tasks gathered page by page: the first page comes with `attach`, each reply
/// says whether there is more. A value with its transitions, so the synchronous and the
/// asynchronous client walk the pages the same way; bounded, since each page must move on.
public struct TaskPages: Sendable {
    public private(set) var tasks: [TaskInfo]
    private let session: String
    private var after: Int?

    public init(attached: Attached, session: String) {
        tasks = attached.tasks
        self.session = session
        after = attached.nextAfterTaskIdentifier
    }

    public init(session: String) {
        tasks = []
        self.session = session
        after = 0
    }

    /// The next page to ask for, or nil when every task is here.
    public var next: DaemonCall<TaskPage>? {
        after.map { DaemonCall.tasks(of: session, after: $0 == 0 ? nil : $0) }
    }

    public mutating func take(_ page: TaskPage) {
        tasks += page.tasks
        skip(page)
    }

    /// Moves past `page` without keeping its tasks.
    mutating func skip(_ page: TaskPage) {
        let previous = after ?? 0
        after = page.nextAfterTaskIdentifier.flatMap { $0 > previous ? $0 : nil }
    }
}

extension DaemonConnection {
    /// Sends the call's request and reads its reply.
    public func perform<Result>(_ call: DaemonCall<Result>) async throws(DaemonConnectionError) -> Result {
        try call.read(try await send(call.request))
    }

    /// ``perform(_:)`` for synchronous callers: blocks this thread until the reply (not for
    /// an event loop's thread).
    public func perform<Result>(waiting call: DaemonCall<Result>) throws(DaemonConnectionError) -> Result {
        try call.read(try sendAndWait(call.request))
    }

    /// Every task of `session`, all pages (the connection attached to it).
    public func allTasks(_ pages: TaskPages) async throws(DaemonConnectionError) -> [TaskInfo] {
        var pages = pages
        while let next = pages.next { pages.take(try await perform(next)) }
        return pages.tasks
    }

    /// A session's tasks a page at a time (at most ``TaskPage/maximumCount`` each), handed to
    /// `body` as they arrive: memory holds one page, however many tasks the session has.
    public func eachTaskPage(of session: String, _ body: ([TaskInfo]) throws -> Void) async throws {
        var pages = TaskPages(session: session)
        while let next = pages.next {
            let page = try await perform(next)
            try body(page.tasks)
            pages.skip(page)
        }
    }

    /// ``allTasks(_:)`` for synchronous callers.
    public func allTasks(waiting pages: TaskPages) throws(DaemonConnectionError) -> [TaskInfo] {
        var pages = pages
        while let next = pages.next { pages.take(try perform(waiting: next)) }
        return pages.tasks
    }
}
