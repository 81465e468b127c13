public import Foundation

/// A background task as the app asked for it: the one description the library sends
/// (`BackgroundRunner`), the protocol carries (`TaskSubmission`, `TaskInfo`) and the store
/// keeps (`NewTask`, `TaskRecord`, mapped to columns in one place).
///
/// Adding a field to a task means adding it here (to ``TaskOptions`` for a setting), to the
/// store's row mapping (`TaskRecord+Row.swift`) and to a migration (`Schema.swift`); the
/// protocol carries it as it is, and the types that hold a description reach its fields
/// directly (`submission.priority`, `record.retryPolicy`).
///
/// ```swift
/// var upload = TaskDescription(kind: .upload, request: TaskRequest(url: URL(string: "http://127.0.0.1:8080/upload")!, method: "POST"))
/// upload.bodyFile = "/home/me/.local/share/ferry/groups/group.example/photo.jpg"
/// upload.idempotencyKey = "share-2026-11-22-001"
/// upload.retryPolicy = .untilResourceTimeout
/// ```
@dynamicMemberLookup
public struct TaskDescription: Hashable, Sendable, Codable {
    public var kind: TaskKind
    public var request: TaskRequest
    /// The file an upload reads its body from. Required for uploads.
    public var bodyFile: String?
    /// Where a download is written while it runs; nil lets ferryd choose in the container.
    public var destination: String?
    /// How the task is scheduled and retried.
    public var options: TaskOptions

    public init(kind: TaskKind, request: TaskRequest, bodyFile: String? = nil, destination: String? = nil, options: TaskOptions = TaskOptions()) {
        self.kind = kind
        self.request = request
        self.bodyFile = bodyFile
        self.destination = destination
        self.options = options
    }

    /// The options' fields, as if they were the description's own (`description.priority`).
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<TaskOptions, Value>) -> Value {
        get { options[keyPath: keyPath] }
        set { options[keyPath: keyPath] = newValue }
    }

    /// The characters of an HTTP token (RFC 9110 §5.6.2), for methods.
    static let tokenCharacters = Set("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

    /// What is wrong with the description, naming the first field that is; nil when nothing is.
    public var problem: String? {
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https", request.url.host != nil else {
            return "a task's URL must be http or https with a host"
        }
        guard !request.method.isEmpty, request.method.allSatisfy(Self.tokenCharacters.contains) else {
            return "the HTTP method must be a token such as GET or POST"
        }
        if kind == .upload, bodyFile?.isEmpty ?? true { return "an upload needs a body file" }
        if let bodyFile, !bodyFile.hasPrefix("/") { return "the body file must be an absolute path" }
        if let destination, !destination.hasPrefix("/") { return "the destination must be an absolute path" }
        if options.deliverTo != nil, kind != .download { return "only a download can be delivered to a path (deliverTo)" }
        return options.problem
    }

    // One JSON object: the options' keys sit beside the description's own, as the protocol
    // has always sent them (`{"kind":…,"request":…,"priority":0.5,…}`).
    enum CodingKeys: String, CodingKey {
        case kind, request, bodyFile, destination
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(TaskKind.self, forKey: .kind)
        request = try container.decode(TaskRequest.self, forKey: .request)
        bodyFile = try container.decodeIfPresent(String.self, forKey: .bodyFile)
        destination = try container.decodeIfPresent(String.self, forKey: .destination)
        options = try TaskOptions(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(request, forKey: .request)
        try container.encodeIfPresent(bodyFile, forKey: .bodyFile)
        try container.encodeIfPresent(destination, forKey: .destination)
        try options.encode(to: encoder)
    }
}

/// A value that holds a task's description (a submission, a stored record, a reported task)
/// and reads its fields, and its options', as its own: `submission.priority`,
/// `record.request.url`.
@dynamicMemberLookup
public protocol HoldsTaskDescription {
    var task: TaskDescription { get set }
}

extension HoldsTaskDescription {
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<TaskDescription, Value>) -> Value {
        get { task[keyPath: keyPath] }
        set { task[keyPath: keyPath] = newValue }
    }

    /// The options' fields in one step (`record.priority`). Through the description's own
    /// subscript it would be a key path holding a key path, which Swift builds anew at every
    /// access; this one is a constant.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<TaskOptions, Value>) -> Value {
        get { task.options[keyPath: keyPath] }
        set { task.options[keyPath: keyPath] = newValue }
    }
}

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

/// How a task is scheduled, timed and retried: what the app set on the task and its
/// session's configuration.
public struct TaskOptions: Hashable, Sendable, Codable {
    /// A client-chosen key: submitting the same key again in the session returns the task
    /// the first submission created instead of a second task.
    public var idempotencyKey: String?
    /// 0 (lowest) to 1 (highest); 0.5 by default, as `URLSessionTask.defaultPriority`.
    public var priority: Double
    /// The task does not start before this date.
    public var earliestBeginDate: Date?
    public var taskDescription: String?
    /// The configuration's `timeoutIntervalForResource`: the task fails with `timedOut` when
    /// it has not finished this many seconds after it was submitted, retries included.
    /// nil: 7 days (``defaultResourceTimeout``), as the platform.
    public var timeoutIntervalForResource: Double?
    /// The configuration's `timeoutIntervalForRequest`: an attempt fails when no byte moves
    /// for this many seconds (and is retried when that is safe). nil: 60 s.
    public var timeoutIntervalForRequest: Double?
    /// The session's retry policy; ferryd applies the one rulebook with it
    /// (``RetryPolicy/decide(_:for:failures:timeLeft:random:)``). nil: ferryd's default,
    /// ``RetryPolicy/untilResourceTimeout``.
    public var retryPolicy: RetryPolicy?
    /// Where ferryd puts a download once it completed with a status below 400: an absolute
    /// path outside the session's container, checked when the task is submitted (its folder
    /// exists and ferryd, the user's own process, may write in it). ferryd moves the file
    /// there (renames it, or copies it to another file system) and never replaces a file
    /// already there: `photo.jpg` taken becomes `photo (1).jpg`, the first free name. The
    /// path it used is the task's `deliveredTo` and its `downloadFinished` location.
    /// nil: the file stays where it was written (``TaskDescription/destination``).
    ///
    /// ```swift
    /// var download = TaskDescription(kind: .download, request: TaskRequest(url: URL(string: "http://127.0.0.1:8080/big.iso")!))
    /// download.deliverTo = "/home/me/Downloads/big.iso"
    /// ```
    public var deliverTo: String?
    /// A download's expected SHA-256 (64 hex digits): bytes that do not match fail the task
    /// (`integrityCheckFailed`) and the file is not delivered.
    public var expectedSHA256: String?

    /// What ``timeoutIntervalForResource`` is when a task leaves it out: 7 days.
    public static let defaultResourceTimeout: Double = 7 * 24 * 3600

    public init(
        idempotencyKey: String? = nil, priority: Double = 0.5, earliestBeginDate: Date? = nil, taskDescription: String? = nil,
        timeoutIntervalForResource: Double? = nil, timeoutIntervalForRequest: Double? = nil, retryPolicy: RetryPolicy? = nil,
        deliverTo: String? = nil, expectedSHA256: String? = nil
    ) {
        self.idempotencyKey = idempotencyKey
        self.priority = priority
        self.earliestBeginDate = earliestBeginDate
        self.taskDescription = taskDescription
        self.timeoutIntervalForResource = timeoutIntervalForResource
        self.timeoutIntervalForRequest = timeoutIntervalForRequest
        self.retryPolicy = retryPolicy
        self.deliverTo = deliverTo
        self.expectedSHA256 = expectedSHA256
    }

    /// What is wrong with the options, naming the first field that is; nil when nothing is.
    public var problem: String? {
        guard priority >= 0, priority <= 1 else { return "priority is between 0 and 1" }
        if let idempotencyKey, idempotencyKey.isEmpty || idempotencyKey.utf8.count > 256 {
            return "an idempotency key has 1 to 256 bytes"
        }
        for (name, value) in [("timeoutIntervalForResource", timeoutIntervalForResource), ("timeoutIntervalForRequest", timeoutIntervalForRequest)] {
            if let value, !(value > 0 && value.isFinite) { return "\(name) is a positive number of seconds" }
        }
        if let deliverTo, !deliverTo.hasPrefix("/") || deliverTo.hasSuffix("/") || deliverTo.utf8.contains(0) {
            return "deliverTo is the absolute path of a file"
        }
        if let expectedSHA256, expectedSHA256.count != 64 || !expectedSHA256.allSatisfy(\.isHexDigit) {
            return "expectedSHA256 is 64 hexadecimal digits"
        }
        return nil
    }

    enum CodingKeys: String, CodingKey {
        case idempotencyKey, priority, earliestBeginDate, taskDescription, timeoutIntervalForResource, timeoutIntervalForRequest, retryPolicy
        case deliverTo, expectedSHA256
    }

    /// A missing priority is the default, 0.5; every other field is optional.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        idempotencyKey = try container.decodeIfPresent(String.self, forKey: .idempotencyKey)
        priority = try container.decodeIfPresent(Double.self, forKey: .priority) ?? 0.5
        earliestBeginDate = try container.decodeIfPresent(Date.self, forKey: .earliestBeginDate)
        taskDescription = try container.decodeIfPresent(String.self, forKey: .taskDescription)
        timeoutIntervalForResource = try container.decodeIfPresent(Double.self, forKey: .timeoutIntervalForResource)
        timeoutIntervalForRequest = try container.decodeIfPresent(Double.self, forKey: .timeoutIntervalForRequest)
        retryPolicy = try container.decodeIfPresent(RetryPolicy.self, forKey: .retryPolicy)
        deliverTo = try container.decodeIfPresent(String.self, forKey: .deliverTo)
        expectedSHA256 = try container.decodeIfPresent(String.self, forKey: .expectedSHA256)
    }
}
