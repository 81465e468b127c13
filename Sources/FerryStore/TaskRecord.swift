public import FerryCore
public import Foundation

/// A background task as ferryd keeps it: one row of the `task` table.
///
/// Tasks are created by ``FerryStore/submit(_:now:)`` and changed by
/// ``FerryStore/updateTask(session:task:appending:now:durability:_:)``, each in one transaction.
///
/// ```swift
/// let running = try await store.updateTask(session: "com.example.bg", task: 3) { task in
///     task.state = .running
///     task.attemptCount += 1
/// }
/// ```
public struct TaskRecord: Hashable, Sendable, HoldsTaskDescription {
    // Identity: set at submission, never changed.
    public internal(set) var sessionIdentifier: String
    public internal(set) var taskIdentifier: Int
    /// What the client submitted (FerryCore's description, the protocol's too); its fields
    /// read as the record's own: `record.kind`, `record.request.url`, `record.priority`.
    public var task: TaskDescription

    public var state: TaskState

    // Progress.
    public var bytesSent: Int64
    public var bytesReceived: Int64
    public var bytesExpectedToSend: Int64?
    public var bytesExpectedToReceive: Int64?

    // Resuming: a download's validator (ETag or Last-Modified) and the byte it reached; an
    // upload's resource on a server that speaks resumable uploads.
    public var resumeValidator: String?
    public var resumeOffset: Int64?
    public var uploadResourceURL: String?
    public var uploadInteropVersion: Int?

    // Scheduling.
    /// How many times the transfer was started.
    public var attemptCount: Int
    /// A waiting task does not run before this time (backoff, `Retry-After`).
    public var nextAttemptAt: Date?
    public var lastErrorCode: String?
    public var lastErrorMessage: String?
    /// The HTTP status of the response a completed task got (an error status is a
    /// completed task too, as on the platform).
    public var responseStatus: Int?
    /// Why `nextAttemptAt` is set: after a failure (`backoff`) or because the server said
    /// when (`retryAfter`).
    public var retryReason: RetryWait?
    /// Where ferryd put the finished download it was asked to deliver (`task.deliverTo`, or
    /// the first free name beside it).
    public var deliveredTo: String?

    public internal(set) var createdAt: Date
    /// Set by the store on every change.
    public internal(set) var updatedAt: Date
    /// What the task may answer a `401` with (``NewTask/credentials``).
    public internal(set) var credentials: [TaskCredential] = []
}

/// A task to store: what the client submitted. The store adds the identity, the state
/// (`waiting`, or `suspended` when asked) and the times.
///
/// ```swift
/// var upload = TaskDescription(kind: .upload, request: TaskRequest(url: URL(string: "http://127.0.0.1:8080/upload")!, method: "POST"))
/// upload.bodyFile = "/data/group.example/photo.jpg"
/// upload.idempotencyKey = "share-001"
/// let result = try await store.submit(NewTask(sessionIdentifier: "com.example.bg", task: upload))
/// if !result.isNew { print("already submitted as task", result.task.taskIdentifier) }
/// ```
public struct NewTask: Hashable, Sendable, HoldsTaskDescription {
    public var sessionIdentifier: String
    /// An identifier reserved with ``FerryStore/nextTaskIdentifier(in:)``, or nil for a new one.
    public var taskIdentifier: Int?
    public var task: TaskDescription
    /// Where a download from resume data continues: validator and offset, both or neither.
    public var resumeValidator: String?
    public var resumeOffset: Int64?
    /// `waiting` (the default) or `suspended`.
    public var initialState: TaskState
    /// An upload's body size, when known at submission: the task's bytes expected to send from
    /// the start, so a relaunched app's `allTasks` tells it before the first byte went.
    public var bodyLength: Int64?
    /// Credentials for the task's host, to answer a `401` with (the submission's).
    public var credentials: [TaskCredential] = []

    public init(
        sessionIdentifier: String, taskIdentifier: Int? = nil, task: TaskDescription,
        resumeValidator: String? = nil, resumeOffset: Int64? = nil, initialState: TaskState = .waiting
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.task = task
        self.resumeValidator = resumeValidator
        self.resumeOffset = resumeOffset
        self.initialState = initialState
    }

    func record(identifier: Int, now: Date) -> TaskRecord {
        TaskRecord(
            sessionIdentifier: sessionIdentifier, taskIdentifier: identifier, task: task, state: initialState,
            bytesSent: 0, bytesReceived: resumeOffset ?? 0, bytesExpectedToSend: bodyLength, bytesExpectedToReceive: nil,
            resumeValidator: resumeValidator, resumeOffset: resumeOffset, uploadResourceURL: nil, uploadInteropVersion: nil,
            attemptCount: 0, nextAttemptAt: nil, lastErrorCode: nil, lastErrorMessage: nil, responseStatus: nil, retryReason: nil,
            deliveredTo: nil, createdAt: now, updatedAt: now, credentials: credentials)
    }
}

/// What ``FerryStore/submit(_:now:)`` stored, or found.
public struct SubmitResult: Hashable, Sendable {
    public var task: TaskRecord
    /// False when the idempotency key had been used in the session: `task` is the task the
    /// first submission created, unchanged.
    public var isNew: Bool
}
