public import FerryCore
public import Foundation

/// A task handed to ferryd by ``Request/submit(_:)``: its ``TaskDescription`` (FerryCore's,
/// the same the store keeps), plus where it goes and what it continues from.
///
/// ```swift
/// var upload = TaskSubmission(
///     sessionIdentifier: "com.example.bg", kind: .upload,
///     request: TaskRequest(url: URL(string: "http://127.0.0.1:8080/upload")!, method: "POST"))
/// upload.bodyFile = "/home/me/.local/share/ferry/groups/group.example/photo.jpg"
/// upload.idempotencyKey = "share-2026-11-22-001"
/// ```
///
/// On the wire, one object: the description's fields beside `sessionIdentifier`,
/// `taskIdentifier` and `resumeData`.
public struct TaskSubmission: Hashable, Sendable, Codable, HoldsTaskDescription {
    public var sessionIdentifier: String
    /// A reserved identifier (``Request/reserveTaskIdentifier(_:)``), or nil to get a new one.
    public var taskIdentifier: Int?
    public var task: TaskDescription
    /// Resume data from a cancelled or failed download (the library's documented format).
    public var resumeData: Data?
    /// Credentials for the task's host, to answer a `401` with (the app's credential
    /// storage); kept with the task, never sent back in a ``TaskInfo``.
    public var credentials: [TaskCredential]?

    /// The most ``credentials`` a submission carries.
    public static let maximumCredentials = 32

    /// What ``TaskOptions/timeoutIntervalForResource`` is when a submission leaves it out: 7 days.
    public static let defaultResourceTimeout = TaskOptions.defaultResourceTimeout

    public init(sessionIdentifier: String, taskIdentifier: Int? = nil, task: TaskDescription, resumeData: Data? = nil) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.task = task
        self.resumeData = resumeData
    }

    /// A submission from its most used fields; set any other through the description's names
    /// (`submission.retryPolicy = …`).
    public init(
        sessionIdentifier: String, taskIdentifier: Int? = nil, kind: TaskKind, request: TaskRequest,
        bodyFile: String? = nil, destination: String? = nil, idempotencyKey: String? = nil, priority: Double = 0.5,
        earliestBeginDate: Date? = nil, taskDescription: String? = nil, resumeData: Data? = nil
    ) {
        let options = TaskOptions(idempotencyKey: idempotencyKey, priority: priority, earliestBeginDate: earliestBeginDate, taskDescription: taskDescription)
        self.init(
            sessionIdentifier: sessionIdentifier, taskIdentifier: taskIdentifier,
            task: TaskDescription(kind: kind, request: request, bodyFile: bodyFile, destination: destination, options: options), resumeData: resumeData)
    }

    /// Checks what can be checked without the daemon's state.
    ///
    /// - Throws: ``FerryProtocolError/Code/badRequest`` naming the first field that is wrong.
    public func validate() throws(FerryProtocolError) {
        func bad(_ message: String) -> FerryProtocolError { FerryProtocolError(.badRequest, message) }
        guard !sessionIdentifier.isEmpty, sessionIdentifier.utf8.count <= 1024 else {
            throw bad("a session identifier has 1 to 1024 bytes")
        }
        if let taskIdentifier, taskIdentifier < 1 { throw bad("task identifiers start at 1") }
        if let problem = task.problem { throw bad(problem) }
        if resumeData != nil, task.kind != .download { throw bad("only a download can start from resume data") }
        if let credentials, credentials.count > Self.maximumCredentials {
            throw bad("at most \(Self.maximumCredentials) credentials come with a task")
        }
    }

    enum CodingKeys: String, CodingKey {
        case sessionIdentifier, taskIdentifier, resumeData, credentials
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sessionIdentifier = try container.decode(String.self, forKey: .sessionIdentifier)
        taskIdentifier = try container.decodeIfPresent(Int.self, forKey: .taskIdentifier)
        resumeData = try container.decodeIfPresent(Data.self, forKey: .resumeData)
        credentials = try container.decodeIfPresent([TaskCredential].self, forKey: .credentials)
        task = try TaskDescription(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sessionIdentifier, forKey: .sessionIdentifier)
        try container.encodeIfPresent(taskIdentifier, forKey: .taskIdentifier)
        try container.encodeIfPresent(resumeData, forKey: .resumeData)
        try container.encodeIfPresent(credentials, forKey: .credentials)
        try task.encode(to: encoder)
    }
}

/// A task as ferryd reports it: its description, where it is, and its last error. On the
/// wire, one object, the description's fields beside the others.
public struct TaskInfo: Hashable, Sendable, Codable, HoldsTaskDescription {
    public var sessionIdentifier: String
    public var taskIdentifier: Int
    public var task: TaskDescription
    public var state: TaskState
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
    /// The HTTP status of a completed task's response. A 404 is a completed task with
    /// `responseStatus` 404, as on the platform (the app decides); `ferry list` shows it as failed.
    public var responseStatus: Int?
    /// Where ferryd put a completed download it was asked to deliver (``TaskOptions/deliverTo``,
    /// or the first free name beside it); nil until then, and for an HTTP error status.
    public var deliveredTo: String?
    /// In task lists: whether the session still has events of this task that its owner has
    /// not acknowledged. A finished task with none was delivered: a relaunched app does not
    /// list it. nil where ferryd does not say (a submit's reply).
    public var eventsPending: Bool?

    public init(
        sessionIdentifier: String, taskIdentifier: Int, task: TaskDescription, state: TaskState,
        bytesSent: Int64 = 0, bytesReceived: Int64 = 0, bytesExpectedToSend: Int64? = nil, bytesExpectedToReceive: Int64? = nil,
        attemptCount: Int = 0, nextAttemptDate: Date? = nil, lastError: FerryProtocolError? = nil, waitingReason: WaitingReason? = nil,
        responseStatus: Int? = nil, deliveredTo: String? = nil, eventsPending: Bool? = nil
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.task = task
        self.state = state
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.bytesExpectedToSend = bytesExpectedToSend
        self.bytesExpectedToReceive = bytesExpectedToReceive
        self.attemptCount = attemptCount
        self.nextAttemptDate = nextAttemptDate
        self.lastError = lastError
        self.waitingReason = waitingReason
        self.responseStatus = responseStatus
        self.deliveredTo = deliveredTo
        self.eventsPending = eventsPending
    }

    /// A finished task whose every event its owner acknowledged: nothing more will come of it.
    public var isDelivered: Bool { state.isFinal && eventsPending == false }

    enum CodingKeys: String, CodingKey {
        case sessionIdentifier, taskIdentifier, state, bytesSent, bytesReceived, bytesExpectedToSend, bytesExpectedToReceive
        case attemptCount, nextAttemptDate, lastError, waitingReason, responseStatus, deliveredTo, eventsPending
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sessionIdentifier = try container.decode(String.self, forKey: .sessionIdentifier)
        taskIdentifier = try container.decode(Int.self, forKey: .taskIdentifier)
        task = try TaskDescription(from: decoder)
        state = try container.decode(TaskState.self, forKey: .state)
        bytesSent = try container.decode(Int64.self, forKey: .bytesSent)
        bytesReceived = try container.decode(Int64.self, forKey: .bytesReceived)
        bytesExpectedToSend = try container.decodeIfPresent(Int64.self, forKey: .bytesExpectedToSend)
        bytesExpectedToReceive = try container.decodeIfPresent(Int64.self, forKey: .bytesExpectedToReceive)
        attemptCount = try container.decode(Int.self, forKey: .attemptCount)
        nextAttemptDate = try container.decodeIfPresent(Date.self, forKey: .nextAttemptDate)
        lastError = try container.decodeIfPresent(FerryProtocolError.self, forKey: .lastError)
        waitingReason = try container.decodeIfPresent(WaitingReason.self, forKey: .waitingReason)
        responseStatus = try container.decodeIfPresent(Int.self, forKey: .responseStatus)
        deliveredTo = try container.decodeIfPresent(String.self, forKey: .deliveredTo)
        eventsPending = try container.decodeIfPresent(Bool.self, forKey: .eventsPending)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sessionIdentifier, forKey: .sessionIdentifier)
        try container.encode(taskIdentifier, forKey: .taskIdentifier)
        try task.encode(to: encoder)
        try container.encode(state, forKey: .state)
        try container.encode(bytesSent, forKey: .bytesSent)
        try container.encode(bytesReceived, forKey: .bytesReceived)
        try container.encodeIfPresent(bytesExpectedToSend, forKey: .bytesExpectedToSend)
        try container.encodeIfPresent(bytesExpectedToReceive, forKey: .bytesExpectedToReceive)
        try container.encode(attemptCount, forKey: .attemptCount)
        try container.encodeIfPresent(nextAttemptDate, forKey: .nextAttemptDate)
        try container.encodeIfPresent(lastError, forKey: .lastError)
        try container.encodeIfPresent(waitingReason, forKey: .waitingReason)
        try container.encodeIfPresent(responseStatus, forKey: .responseStatus)
        try container.encodeIfPresent(deliveredTo, forKey: .deliveredTo)
        try container.encodeIfPresent(eventsPending, forKey: .eventsPending)
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
    /// False for a session whose events ferryd acknowledges itself while no process owns it
    /// (``AttachSession/keepsEvents``); nil from daemons that do not say.
    public var keepsEvents: Bool?

    public init(
        sessionIdentifier: String, appBundleIdentifier: String, sharedContainerIdentifier: String? = nil,
        isOwned: Bool, taskCount: Int, undeliveredEventCount: Int, keepsEvents: Bool? = nil
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.appBundleIdentifier = appBundleIdentifier
        self.sharedContainerIdentifier = sharedContainerIdentifier
        self.isOwned = isOwned
        self.taskCount = taskCount
        self.undeliveredEventCount = undeliveredEventCount
        self.keepsEvents = keepsEvents
    }
}
