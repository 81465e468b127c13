public import Foundation

/// ferryd's answer to a successful request, inside ``DaemonMessage/reply(id:_:)``.
///
/// ```swift
/// if case .reply(7, .submitted(let submitted)) = message {
///     print(submitted.task.taskIdentifier, submitted.existing ? "(already submitted)" : "")
/// }
/// ```
public enum Reply: Hashable, Sendable {
    case attached(Attached)
    case sessions([SessionInfo])
    case tasks(TaskPage)
    case taskIdentifier(Int)
    case submitted(Submitted)
    /// The task after suspend, resume or cancel.
    case task(TaskInfo)
    case resumeData(CancelledWithResumeData)
    case invalidated(SessionReference)
    case acknowledged(Acknowledge)
    /// The answer to ``Request/taken(_:)``.
    case taken(EventsTaken)
    /// The answer to ``Request/status``.
    case status(DaemonStatus)
    /// The answer to ``Request/metrics``: Prometheus text exposition format 0.0.4.
    case metrics(String)
    /// The answer to ``Request/stop``: ferryd is shutting down.
    case stopping
    /// The answer to ``Request/answerChallenge(_:)``: the transfer goes on with it.
    case challengeAnswered(challengeID: UInt64)

    /// The `type` this reply is written with, for logs.
    public var typeName: String { tag.rawValue }

    enum Tag: String, TypeTag {
        case attached, sessions, tasks, taskIdentifier, submitted, task, resumeData, invalidated, acknowledged
        case taken, status, metrics, stopping, challengeAnswered
        static var family: String { "reply" }
    }

    var tag: Tag {
        switch self {
        case .attached: .attached
        case .sessions: .sessions
        case .tasks: .tasks
        case .taskIdentifier: .taskIdentifier
        case .submitted: .submitted
        case .task: .task
        case .resumeData: .resumeData
        case .invalidated: .invalidated
        case .acknowledged: .acknowledged
        case .taken: .taken
        case .status: .status
        case .metrics: .metrics
        case .stopping: .stopping
        case .challengeAnswered: .challengeAnswered
        }
    }
}

extension Reply: Codable {
    public init(from decoder: any Decoder) throws {
        switch try decoder.tag(Tag.self) {
        case .attached: self = .attached(try Attached(from: decoder))
        case .sessions: self = .sessions(try decoder.field("sessions"))
        case .tasks: self = .tasks(try TaskPage(from: decoder))
        case .taskIdentifier: self = .taskIdentifier(try decoder.field("taskIdentifier"))
        case .submitted: self = .submitted(try Submitted(from: decoder))
        case .task: self = .task(try decoder.field("task"))
        case .resumeData: self = .resumeData(try CancelledWithResumeData(from: decoder))
        case .invalidated: self = .invalidated(try SessionReference(from: decoder))
        case .acknowledged: self = .acknowledged(try Acknowledge(from: decoder))
        case .taken: self = .taken(try EventsTaken(from: decoder))
        case .status: self = .status(try DaemonStatus(from: decoder))
        case .metrics: self = .metrics(try decoder.field("text"))
        case .stopping: self = .stopping
        case .challengeAnswered: self = .challengeAnswered(challengeID: try decoder.field("challengeID"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .attached(let value): try encoder.encode(tag: tag, payload: value)
        case .sessions(let value): try encoder.encode(tag: tag, fields: ["sessions": value])
        case .tasks(let value): try encoder.encode(tag: tag, payload: value)
        case .taskIdentifier(let value): try encoder.encode(tag: tag, fields: ["taskIdentifier": value])
        case .submitted(let value): try encoder.encode(tag: tag, payload: value)
        case .task(let value): try encoder.encode(tag: tag, fields: ["task": value])
        case .resumeData(let value): try encoder.encode(tag: tag, payload: value)
        case .invalidated(let value): try encoder.encode(tag: tag, payload: value)
        case .acknowledged(let value): try encoder.encode(tag: tag, payload: value)
        case .taken(let value): try encoder.encode(tag: tag, payload: value)
        case .status(let value): try encoder.encode(tag: tag, payload: value)
        case .metrics(let text): try encoder.encode(tag: tag, fields: ["text": text])
        case .stopping: try encoder.encode(tag: tag)
        case .challengeAnswered(let id): try encoder.encode(tag: tag, fields: ["challengeID": id])
        }
    }
}

/// The connection is attached; the session's tasks as they are now (`getAllTasks`), the
/// first page of them when there are more than ``TaskPage/maximumCount``.
public struct Attached: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    /// Whether this connection owns the session (and so will receive its events).
    public var owner: Bool
    public var tasks: [TaskInfo]
    /// Set when there are more tasks: ask with ``Request/listTasks(_:)`` after this identifier.
    public var nextAfterTaskIdentifier: Int?

    public init(sessionIdentifier: String, owner: Bool, tasks: [TaskInfo], nextAfterTaskIdentifier: Int? = nil) {
        self.sessionIdentifier = sessionIdentifier
        self.owner = owner
        self.tasks = tasks
        self.nextAfterTaskIdentifier = nextAfterTaskIdentifier
    }
}

/// A page of tasks, so that a session with thousands of tasks never needs a frame larger
/// than the limit.
public struct TaskPage: Hashable, Sendable, Codable {
    /// The most tasks one page holds. 500 typical tasks are about 300 KiB of JSON; tasks with
    /// very long URLs or many headers are not, so the daemon also cuts a page short when its
    /// encoded reply would not fit a frame.
    public static let maximumCount = 500

    public var tasks: [TaskInfo]
    /// Set when there are more tasks: the next ``ListTasks/afterTaskIdentifier``.
    public var nextAfterTaskIdentifier: Int?

    public init(tasks: [TaskInfo], nextAfterTaskIdentifier: Int? = nil) {
        self.tasks = tasks
        self.nextAfterTaskIdentifier = nextAfterTaskIdentifier
    }
}

/// The stored task; `existing` is true when the idempotency key had been used before and
/// this is the task the first submission created.
public struct Submitted: Hashable, Sendable, Codable {
    public var task: TaskInfo
    public var existing: Bool

    public init(task: TaskInfo, existing: Bool) {
        self.task = task
        self.existing = existing
    }
}

/// The cancelled download, and resume data when the server's validators allow continuing.
public struct CancelledWithResumeData: Hashable, Sendable, Codable {
    public var task: TaskInfo
    public var resumeData: Data?

    public init(task: TaskInfo, resumeData: Data?) {
        self.task = task
        self.resumeData = resumeData
    }
}

/// How ferryd is, for `ferry daemon status`.
///
/// ```swift
/// if case .reply(_, .status(let status)) = message {
///     print("ferryd \(status.daemonVersion), pid \(status.pid), \(status.runningTaskCount) running")
/// }
/// ```
public struct DaemonStatus: Hashable, Sendable, Codable {
    public var daemonVersion: String
    public var pid: Int32
    public var startedAt: Date
    /// The socket it listens on and its store, so a person can find them.
    public var socketPath: String?
    public var storePath: String?
    public var sessionCount: Int
    /// Open client connections, the asking one included.
    public var connectionCount: Int
    /// Sessions a process owns now.
    public var ownedSessionCount: Int
    public var waitingTaskCount: Int
    public var runningTaskCount: Int
    public var suspendedTaskCount: Int
    /// Events stored and not yet acknowledged, all sessions together.
    public var undeliveredEventCount: Int
    /// Finished tasks still in the store (they are forgotten after their retention).
    public var completedTaskCount: Int?
    public var failedTaskCount: Int?
    public var cancelledTaskCount: Int?
    /// ferryd's resident memory, from `/proc/self/status`.
    public var residentMemoryBytes: Int64?
    /// What ferryd did since it started.
    public var activity: DaemonActivity?
    /// The network and power as ferryd sees them; nil until its monitor's first reading.
    public var network: NetworkStatus?

    public init(
        daemonVersion: String, pid: Int32, startedAt: Date, socketPath: String? = nil, storePath: String? = nil,
        sessionCount: Int = 0, connectionCount: Int = 0, ownedSessionCount: Int = 0, waitingTaskCount: Int = 0,
        runningTaskCount: Int = 0, suspendedTaskCount: Int = 0, undeliveredEventCount: Int = 0,
        completedTaskCount: Int? = nil, failedTaskCount: Int? = nil, cancelledTaskCount: Int? = nil,
        residentMemoryBytes: Int64? = nil, activity: DaemonActivity? = nil, network: NetworkStatus? = nil
    ) {
        self.daemonVersion = daemonVersion
        self.pid = pid
        self.startedAt = startedAt
        self.socketPath = socketPath
        self.storePath = storePath
        self.sessionCount = sessionCount
        self.connectionCount = connectionCount
        self.ownedSessionCount = ownedSessionCount
        self.waitingTaskCount = waitingTaskCount
        self.runningTaskCount = runningTaskCount
        self.suspendedTaskCount = suspendedTaskCount
        self.undeliveredEventCount = undeliveredEventCount
        self.completedTaskCount = completedTaskCount
        self.failedTaskCount = failedTaskCount
        self.cancelledTaskCount = cancelledTaskCount
        self.residentMemoryBytes = residentMemoryBytes
        self.activity = activity
        self.network = network
    }
}

/// The network and power as ferryd's monitor last read them (`ferry daemon status`).
public struct NetworkStatus: Hashable, Sendable, Codable {
    /// Where the reading came from: `netlink`, or `proc` when polling; `+networkmanager` when
    /// NetworkManager said which links are metered (`netlink+networkmanager`).
    public var source: String
    /// A link that is up has a default route: hosts by name can be reached.
    public var hasDefaultRoute: Bool
    /// The links that are up (loopback aside), with what ferryd counts them as.
    public var links: [Link]
    public var isOnMains: Bool

    public struct Link: Hashable, Sendable, Codable {
        public var name: String
        public var isExpensive: Bool
        public var isConstrained: Bool
        public var isCellular: Bool

        public init(name: String, isExpensive: Bool = false, isConstrained: Bool = false, isCellular: Bool = false) {
            self.name = name
            self.isExpensive = isExpensive
            self.isConstrained = isConstrained
            self.isCellular = isCellular
        }
    }

    public init(source: String, hasDefaultRoute: Bool, links: [Link], isOnMains: Bool) {
        self.source = source
        self.hasDefaultRoute = hasDefaultRoute
        self.links = links
        self.isOnMains = isOnMains
    }
}

/// What ferryd did since it started: the counters of `ferry daemon status --json` and of
/// `ferry daemon metrics` (where each is a Prometheus counter).
public struct DaemonActivity: Hashable, Sendable, Codable {
    /// Transfer attempts started (a retry or a resume is another attempt).
    public var attempts: Int = 0
    /// Failed attempts scheduled to be tried again.
    public var retries: Int = 0
    public var completedTasks: Int = 0
    public var failedTasks: Int = 0
    public var cancelledTasks: Int = 0
    /// Body bytes moved by attempts (a resumed transfer counts only what it moved again).
    public var bytesSent: Int64 = 0
    public var bytesReceived: Int64 = 0
    /// Requests answered, all connections together.
    public var requests: Int = 0
    /// Connections accepted (those turned away as `busy` included).
    public var connections: Int = 0

    public init() {}
}
