public import FerryCore
public import Foundation

/// The request a task sends: URL, method and header fields. The body, if any, is a file.
public struct TaskRequest: Hashable, Sendable, Codable {
    public var url: URL
    public var method: String
    public var headers: HeaderFields

    public init(url: URL, method: String = "GET", headers: HeaderFields = [:]) {
        self.url = url
        self.method = method
        self.headers = headers
    }
}

/// A task handed to ferryd by ``Request/submit(_:)``.
///
/// ```swift
/// var upload = TaskSubmission(
///     sessionIdentifier: "com.example.bg", kind: .upload,
///     request: TaskRequest(url: URL(string: "http://127.0.0.1:8080/upload")!, method: "POST"))
/// upload.bodyFile = "/home/me/.local/share/ferry/groups/group.example/photo.jpg"
/// upload.idempotencyKey = "share-2026-11-22-001"
/// ```
public struct TaskSubmission: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    /// A reserved identifier (``Request/reserveTaskIdentifier(_:)``), or nil to get a new one.
    public var taskIdentifier: Int?
    public var kind: TaskKind
    public var request: TaskRequest
    /// The file an upload reads its body from. Required for uploads.
    public var bodyFile: String?
    /// Where a download is written while it runs; nil lets ferryd choose in the container.
    public var destination: String?
    /// A client-chosen key: submitting the same key again in the session returns the task
    /// the first submission created instead of a second task.
    public var idempotencyKey: String?
    /// 0 (lowest) to 1 (highest); 0.5 by default, as `URLSessionTask.defaultPriority`.
    public var priority: Double
    /// The task does not start before this date.
    public var earliestBeginDate: Date?
    public var taskDescription: String?
    /// Resume data from a cancelled or failed download (the library's documented format).
    public var resumeData: Data?
    /// The configuration's `timeoutIntervalForResource`: the task fails with `timedOut` when
    /// it has not finished this many seconds after it was submitted, retries included.
    /// nil: 7 days (``TaskSubmission/defaultResourceTimeout``), as the platform.
    public var timeoutIntervalForResource: Double?
    /// The configuration's `timeoutIntervalForRequest`: an attempt fails when no byte moves
    /// for this many seconds (and is retried when that is safe). nil: 60 s.
    public var timeoutIntervalForRequest: Double?
    /// The session's retry policy; ferryd applies the one rulebook with it
    /// (``RetryPolicy/decide(_:for:failures:timeLeft:random:)``). nil: ferryd's default,
    /// ``RetryPolicy/untilResourceTimeout``.
    public var retryPolicy: RetryPolicy?

    /// What ``timeoutIntervalForResource`` is when a submission leaves it out: 7 days.
    public static let defaultResourceTimeout: Double = 7 * 24 * 3600

    public init(
        sessionIdentifier: String,
        taskIdentifier: Int? = nil,
        kind: TaskKind,
        request: TaskRequest,
        bodyFile: String? = nil,
        destination: String? = nil,
        idempotencyKey: String? = nil,
        priority: Double = 0.5,
        earliestBeginDate: Date? = nil,
        taskDescription: String? = nil,
        resumeData: Data? = nil,
        timeoutIntervalForResource: Double? = nil,
        timeoutIntervalForRequest: Double? = nil,
        retryPolicy: RetryPolicy? = nil
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.kind = kind
        self.request = request
        self.bodyFile = bodyFile
        self.destination = destination
        self.idempotencyKey = idempotencyKey
        self.priority = priority
        self.earliestBeginDate = earliestBeginDate
        self.taskDescription = taskDescription
        self.resumeData = resumeData
        self.timeoutIntervalForResource = timeoutIntervalForResource
        self.timeoutIntervalForRequest = timeoutIntervalForRequest
        self.retryPolicy = retryPolicy
    }

    /// The characters of an HTTP token (RFC 9110 §5.6.2), for methods.
    static let tokenCharacters = Set("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

    /// Checks what can be checked without the daemon's state.
    ///
    /// - Throws: ``FerryProtocolError/Code/badRequest`` naming the first field that is wrong.
    public func validate() throws(FerryProtocolError) {
        func bad(_ message: String) -> FerryProtocolError { FerryProtocolError(.badRequest, message) }
        guard !sessionIdentifier.isEmpty, sessionIdentifier.utf8.count <= 1024 else {
            throw bad("a session identifier has 1 to 1024 bytes")
        }
        if let taskIdentifier, taskIdentifier < 1 { throw bad("task identifiers start at 1") }
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            request.url.host != nil
        else {
            throw bad("a task's URL must be http or https with a host")
        }
        guard !request.method.isEmpty, request.method.allSatisfy(Self.tokenCharacters.contains) else {
            throw bad("the HTTP method must be a token such as GET or POST")
        }
        if kind == .upload, bodyFile?.isEmpty ?? true { throw bad("an upload needs a body file") }
        if let bodyFile, !bodyFile.hasPrefix("/") { throw bad("the body file must be an absolute path") }
        if let destination, !destination.hasPrefix("/") { throw bad("the destination must be an absolute path") }
        guard priority >= 0, priority <= 1 else { throw bad("priority is between 0 and 1") }
        if let idempotencyKey, idempotencyKey.isEmpty || idempotencyKey.utf8.count > 256 {
            throw bad("an idempotency key has 1 to 256 bytes")
        }
        if resumeData != nil, kind != .download { throw bad("only a download can start from resume data") }
        for (name, value) in [("timeoutIntervalForResource", timeoutIntervalForResource), ("timeoutIntervalForRequest", timeoutIntervalForRequest)] {
            if let value, !(value > 0 && value.isFinite) { throw bad("\(name) is a positive number of seconds") }
        }
    }
}

/// A task as ferryd reports it: what was submitted, where it is, and its last error.
public struct TaskInfo: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var taskIdentifier: Int
    public var kind: TaskKind
    public var state: TaskState
    public var request: TaskRequest
    public var taskDescription: String?
    public var idempotencyKey: String?
    public var priority: Double
    public var earliestBeginDate: Date?
    public var bytesSent: Int64
    public var bytesReceived: Int64
    /// nil while unknown.
    public var bytesExpectedToSend: Int64?
    /// nil while unknown.
    public var bytesExpectedToReceive: Int64?
    /// How many times the transfer was started.
    public var attemptCount: Int
    /// When a waiting task next tries (backoff, `Retry-After`), if it is waiting for a time.
    public var nextAttemptDate: Date?
    /// Why the last attempt failed, or why the task failed.
    public var lastError: FerryProtocolError?
    /// Why a task that is not running is not moving, and until when (`ferry explain`).
    /// nil for running and finished tasks, and from daemons that do not say.
    public var waitingReason: WaitingReason?

    public init(
        sessionIdentifier: String, taskIdentifier: Int, kind: TaskKind, state: TaskState,
        request: TaskRequest, taskDescription: String? = nil, idempotencyKey: String? = nil,
        priority: Double = 0.5, earliestBeginDate: Date? = nil, bytesSent: Int64 = 0,
        bytesReceived: Int64 = 0, bytesExpectedToSend: Int64? = nil, bytesExpectedToReceive: Int64? = nil,
        attemptCount: Int = 0, nextAttemptDate: Date? = nil, lastError: FerryProtocolError? = nil,
        waitingReason: WaitingReason? = nil
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.kind = kind
        self.state = state
        self.request = request
        self.taskDescription = taskDescription
        self.idempotencyKey = idempotencyKey
        self.priority = priority
        self.earliestBeginDate = earliestBeginDate
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.bytesExpectedToSend = bytesExpectedToSend
        self.bytesExpectedToReceive = bytesExpectedToReceive
        self.attemptCount = attemptCount
        self.nextAttemptDate = nextAttemptDate
        self.lastError = lastError
        self.waitingReason = waitingReason
    }
}

/// A background session as ferryd reports it.
public struct SessionInfo: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var appBundleIdentifier: String
    public var sharedContainerIdentifier: String?
    /// Whether a process owns the session now.
    public var isOwned: Bool
    public var taskCount: Int
    public var undeliveredEventCount: Int

    public init(
        sessionIdentifier: String, appBundleIdentifier: String, sharedContainerIdentifier: String? = nil,
        isOwned: Bool, taskCount: Int, undeliveredEventCount: Int
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.appBundleIdentifier = appBundleIdentifier
        self.sharedContainerIdentifier = sharedContainerIdentifier
        self.isOwned = isOwned
        self.taskCount = taskCount
        self.undeliveredEventCount = undeliveredEventCount
    }
}
