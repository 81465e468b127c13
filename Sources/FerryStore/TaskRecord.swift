public import FerryCore
public import Foundation

/// A background task as ferryd keeps it: one row of the `task` table.
///
/// Tasks are created by ``FerryStore/submit(_:now:)`` and changed by
/// ``FerryStore/updateTask(session:task:appending:now:_:)``, each in one transaction.
///
/// ```swift
/// let running = try await store.updateTask(session: "com.example.bg", task: 3) { task in
///     task.state = .running
///     task.attemptCount += 1
/// }
/// ```
public struct TaskRecord: Hashable, Sendable, Codable {
    // Identity: set at submission, never changed.
    public internal(set) var sessionIdentifier: String
    public internal(set) var taskIdentifier: Int
    public internal(set) var kind: TaskKind

    public var state: TaskState

    // The request.
    /// Read back as a URL: a row whose text is not one is an error naming the row.
    public var url: URL
    public var method: String
    /// Header fields in order, stored as JSON `[["name","value"],…]`.
    public var headers: HeaderFields
    /// The file an upload reads its body from.
    public var bodyFile: String?
    /// Where a download is written.
    public var destinationFile: String?

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
    public internal(set) var idempotencyKey: String?
    /// 0 (lowest) to 1 (highest).
    public var priority: Double
    public var earliestBeginDate: Date?
    /// How many times the transfer was started.
    public var attemptCount: Int
    /// A waiting task does not run before this time (backoff, `Retry-After`).
    public var nextAttemptAt: Date?
    public var lastErrorCode: String?
    public var lastErrorMessage: String?
    /// Why `nextAttemptAt` is set: after a failure (`backoff`) or because the server said
    /// when (`retryAfter`).
    public var retryReason: RetryWait?
    /// Seconds from creation after which the task fails (`timeoutIntervalForResource`); nil: ferryd's default.
    public var resourceTimeout: Double?
    /// Seconds without a byte after which an attempt fails (`timeoutIntervalForRequest`); nil: ferryd's default.
    public var requestTimeout: Double?
    /// The session's retry policy, as JSON; nil: ferryd's default.
    public var retryPolicy: RetryPolicy?

    public var taskDescription: String?
    public internal(set) var createdAt: Date
    /// Set by the store on every change.
    public internal(set) var updatedAt: Date

    enum CodingKeys: String, CodingKey {
        case sessionIdentifier = "session_identifier", taskIdentifier = "task_identifier"
        case kind, state, url, method, headers, priority
        case bodyFile = "body_file", destinationFile = "destination_file"
        case bytesSent = "bytes_sent", bytesReceived = "bytes_received"
        case bytesExpectedToSend = "bytes_expected_to_send", bytesExpectedToReceive = "bytes_expected_to_receive"
        case resumeValidator = "resume_validator", resumeOffset = "resume_offset"
        case uploadResourceURL = "upload_resource_url", uploadInteropVersion = "upload_interop_version"
        case idempotencyKey = "idempotency_key", earliestBeginDate = "earliest_begin_date"
        case attemptCount = "attempt_count", nextAttemptAt = "next_attempt_at"
        case lastErrorCode = "last_error_code", lastErrorMessage = "last_error_message"
        case retryReason = "retry_reason", resourceTimeout = "resource_timeout", requestTimeout = "request_timeout"
        case retryPolicy = "retry_policy"
        case taskDescription = "task_description", createdAt = "created_at", updatedAt = "updated_at"
    }
}

extension TaskRecord: StoredRecord {
    static let databaseTableName = "task"
    static let identityColumns = ["session_identifier", "task_identifier"]
}

/// A task to store: what the client submitted. The store adds the identity, the state
/// (`waiting`, or `suspended` when asked) and the times.
///
/// ```swift
/// let result = try await store.submit(NewTask(
///     sessionIdentifier: "com.example.bg", kind: .upload, url: "http://127.0.0.1:8080/upload",
///     method: "POST", bodyFile: "/data/group.example/photo.jpg", idempotencyKey: "share-001"))
/// if !result.isNew { print("already submitted as task", result.task.taskIdentifier) }
/// ```
public struct NewTask: Hashable, Sendable {
    public var sessionIdentifier: String
    /// An identifier reserved with ``FerryStore/nextTaskIdentifier(in:)``, or nil for a new one.
    public var taskIdentifier: Int?
    public var kind: TaskKind
    public var url: URL
    public var method: String
    public var headers: HeaderFields
    public var bodyFile: String?
    public var destinationFile: String?
    public var idempotencyKey: String?
    public var priority: Double
    public var earliestBeginDate: Date?
    public var taskDescription: String?
    /// Where a download from resume data continues: validator and offset, both or neither.
    public var resumeValidator: String?
    public var resumeOffset: Int64?
    /// `waiting` (the default) or `suspended`.
    public var initialState: TaskState
    public var resourceTimeout: Double?
    public var requestTimeout: Double?
    public var retryPolicy: RetryPolicy?

    public init(
        sessionIdentifier: String, taskIdentifier: Int? = nil, kind: TaskKind, url: URL,
        method: String = "GET", headers: HeaderFields = [:], bodyFile: String? = nil, destinationFile: String? = nil,
        idempotencyKey: String? = nil, priority: Double = 0.5, earliestBeginDate: Date? = nil,
        taskDescription: String? = nil, resumeValidator: String? = nil, resumeOffset: Int64? = nil,
        initialState: TaskState = .waiting, resourceTimeout: Double? = nil, requestTimeout: Double? = nil,
        retryPolicy: RetryPolicy? = nil
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.kind = kind
        self.url = url
        self.method = method
        self.headers = headers
        self.bodyFile = bodyFile
        self.destinationFile = destinationFile
        self.idempotencyKey = idempotencyKey
        self.priority = priority
        self.earliestBeginDate = earliestBeginDate
        self.taskDescription = taskDescription
        self.resumeValidator = resumeValidator
        self.resumeOffset = resumeOffset
        self.initialState = initialState
        self.resourceTimeout = resourceTimeout
        self.requestTimeout = requestTimeout
        self.retryPolicy = retryPolicy
    }

    func record(identifier: Int, now: Date) -> TaskRecord {
        TaskRecord(
            sessionIdentifier: sessionIdentifier, taskIdentifier: identifier, kind: kind, state: initialState,
            url: url, method: method, headers: headers, bodyFile: bodyFile, destinationFile: destinationFile,
            bytesSent: 0, bytesReceived: resumeOffset ?? 0, bytesExpectedToSend: nil, bytesExpectedToReceive: nil,
            resumeValidator: resumeValidator, resumeOffset: resumeOffset, uploadResourceURL: nil,
            uploadInteropVersion: nil, idempotencyKey: idempotencyKey, priority: priority,
            earliestBeginDate: earliestBeginDate, attemptCount: 0, nextAttemptAt: nil, lastErrorCode: nil,
            lastErrorMessage: nil, retryReason: nil, resourceTimeout: resourceTimeout, requestTimeout: requestTimeout,
            retryPolicy: retryPolicy, taskDescription: taskDescription, createdAt: now, updatedAt: now)
    }
}

/// What ``FerryStore/submit(_:now:)`` stored, or found.
public struct SubmitResult: Hashable, Sendable {
    public var task: TaskRecord
    /// False when the idempotency key had been used in the session: `task` is the task the
    /// first submission created, unchanged.
    public var isNew: Bool
}
