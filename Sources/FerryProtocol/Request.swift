public import FerryCore

/// What a client asks of ferryd, inside ``ClientMessage/request(id:_:)``.
///
/// Only the connection that *owns* a session (attached with `owner: true`) may submit,
/// change tasks, acknowledge events or invalidate; a watch-only connection may list. See
/// docs/protocol.md for the reply to each request.
///
/// ```swift
/// let request = Request.acknowledge(Acknowledge(sessionIdentifier: "com.example.bg", upToSequence: 42))
/// ```
public enum Request: Hashable, Sendable {
    /// Attach to a background session, creating it if needed. Reply: ``Reply/attached(_:)``.
    case attach(AttachSession)
    /// Every session of this user. Reply: ``Reply/sessions(_:)``.
    case listSessions
    /// The tasks of a session, a page at a time. Reply: ``Reply/tasks(_:)``.
    case listTasks(ListTasks)
    /// Task identifiers to give tasks before they are submitted: `count` of them in a row.
    /// Reply: ``Reply/taskIdentifier(_:)``, the first.
    case reserveTaskIdentifier(TaskIdentifierReservation)
    /// Store a task and schedule it. Reply: ``Reply/submitted(_:)``, once the task is on disk.
    case submit(TaskSubmission)
    /// Reply: ``Reply/task(_:)`` with the new state.
    case suspend(TaskReference)
    /// Reply: ``Reply/task(_:)`` with the new state.
    case resume(TaskReference)
    /// Reply: ``Reply/task(_:)`` with the new state.
    case cancel(TaskReference)
    /// Cancel a download and keep what it has. Reply: ``Reply/resumeData(_:)``.
    case cancelProducingResumeData(TaskReference)
    /// End the session: cancel its tasks, or let them finish. Reply: ``Reply/invalidated(_:)``.
    case invalidate(Invalidate)
    /// The client has handled every event up to a sequence number; ferryd deletes them.
    /// Reply: ``Reply/acknowledged(_:)``.
    case acknowledge(Acknowledge)
    /// How many of the session's pushed messages the owner has taken from its connection so
    /// far, for a session attached with an ``AttachSession/eventWindow``: ferryd sends more as
    /// this count grows. Reply: ``Reply/taken(_:)``.
    case taken(EventsTaken)
    /// How ferryd is: version, pid, start time, counts (`ferry daemon status`). Anyone may ask.
    /// Reply: ``Reply/status(_:)``.
    case status
    /// ferryd's figures in the Prometheus text format (`ferry daemon metrics`). Anyone may ask.
    /// Reply: ``Reply/metrics(_:)``.
    case metrics
    /// Stop ferryd gracefully: it answers, closes every connection with a `goodbye`, leaves
    /// running tasks to resume at the next start, and exits. Anyone may ask.
    /// Reply: ``Reply/stopping``.
    case stop
    /// The owner's answer to a ``DaemonMessage/challenge(_:)`` of its session.
    /// Reply: ``Reply/challengeAnswered(challengeID:)``; an unknown or already answered
    /// challenge is ``FerryProtocolError/Code/unknownChallenge``.
    case answerChallenge(ChallengeReply)

    /// The `type` this request is written with, for logs.
    public var typeName: String { tag.rawValue }

    /// The session the request is about; nil for ``listSessions``.
    public var sessionIdentifier: String? {
        switch self {
        case .attach(let attach): attach.sessionIdentifier
        case .listSessions, .status, .metrics, .stop: nil
        case .listTasks(let list): list.sessionIdentifier
        case .reserveTaskIdentifier(let session): session.sessionIdentifier
        case .submit(let submission): submission.sessionIdentifier
        case .suspend(let task), .resume(let task), .cancel(let task), .cancelProducingResumeData(let task):
            task.sessionIdentifier
        case .invalidate(let invalidate): invalidate.sessionIdentifier
        case .acknowledge(let ack): ack.sessionIdentifier
        case .taken(let taken): taken.sessionIdentifier
        case .answerChallenge(let reply): reply.sessionIdentifier
        }
    }

    /// Whether only the owning connection may send this request.
    public var requiresOwner: Bool {
        switch self {
        case .attach, .listSessions, .listTasks, .status, .metrics, .stop: false
        default: true
        }
    }

    /// Whether the request suspends, resumes or cancels one task.
    public var controlsOneTask: Bool {
        switch self {
        case .suspend, .resume, .cancel, .cancelProducingResumeData: true
        default: false
        }
    }

    /// Whether the request only reads: its answer is all it does (ferryd skips it when the
    /// client has already gone).
    public var onlyReads: Bool {
        switch self {
        case .listSessions, .listTasks, .status, .metrics: true
        default: false
        }
    }

    enum Tag: String, TypeTag {
        case attach, listSessions, listTasks, reserveTaskIdentifier, submit, suspend, resume, cancel
        case cancelProducingResumeData, invalidate, acknowledge, taken, status, metrics, stop, answerChallenge
        static var family: String { "request" }
    }

    var tag: Tag {
        switch self {
        case .attach: .attach
        case .listSessions: .listSessions
        case .listTasks: .listTasks
        case .reserveTaskIdentifier: .reserveTaskIdentifier
        case .submit: .submit
        case .suspend: .suspend
        case .resume: .resume
        case .cancel: .cancel
        case .cancelProducingResumeData: .cancelProducingResumeData
        case .invalidate: .invalidate
        case .acknowledge: .acknowledge
        case .taken: .taken
        case .status: .status
        case .metrics: .metrics
        case .stop: .stop
        case .answerChallenge: .answerChallenge
        }
    }
}

extension Request: Codable {
    public init(from decoder: any Decoder) throws {
        switch try decoder.tag(Tag.self) {
        case .attach: self = .attach(try AttachSession(from: decoder))
        case .listSessions: self = .listSessions
        case .listTasks: self = .listTasks(try ListTasks(from: decoder))
        case .reserveTaskIdentifier: self = .reserveTaskIdentifier(try TaskIdentifierReservation(from: decoder))
        case .submit: self = .submit(try TaskSubmission(from: decoder))
        case .suspend: self = .suspend(try TaskReference(from: decoder))
        case .resume: self = .resume(try TaskReference(from: decoder))
        case .cancel: self = .cancel(try TaskReference(from: decoder))
        case .cancelProducingResumeData: self = .cancelProducingResumeData(try TaskReference(from: decoder))
        case .invalidate: self = .invalidate(try Invalidate(from: decoder))
        case .acknowledge: self = .acknowledge(try Acknowledge(from: decoder))
        case .taken: self = .taken(try EventsTaken(from: decoder))
        case .status: self = .status
        case .metrics: self = .metrics
        case .stop: self = .stop
        case .answerChallenge: self = .answerChallenge(try ChallengeReply(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        let payload: (any Encodable)?
        switch self {
        case .attach(let value): payload = value
        case .listSessions, .status, .metrics, .stop: payload = nil
        case .listTasks(let value): payload = value
        case .reserveTaskIdentifier(let value): payload = value
        case .submit(let value): payload = value
        case .suspend(let value), .resume(let value), .cancel(let value), .cancelProducingResumeData(let value):
            payload = value
        case .invalidate(let value): payload = value
        case .acknowledge(let value): payload = value
        case .taken(let value): payload = value
        case .answerChallenge(let value): payload = value
        }
        try encoder.encode(tag: tag, payload: payload)
    }
}

/// Attach this connection to a background session.
public struct AttachSession: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    /// The app group whose shared container the session uses; nil for the app's own container.
    public var sharedContainerIdentifier: String?
    /// True to own the session (one process at a time; it receives the events); false to
    /// watch it (list tasks and see progress) without owning it.
    public var owner: Bool
    /// The configuration's `httpMaximumConnectionsPerHost` (1…64): how many of this session's
    /// tasks run against one host at once. nil keeps what the session had (6 at first).
    /// Only an owner's value is kept.
    public var httpMaximumConnectionsPerHost: Int?
    /// What the session allows of the network. nil keeps what the session had (anything at
    /// first). Only an owner's value is kept.
    public var networkAccess: NetworkAccess?
    /// How the session's transfers are made (its trust roots). nil keeps what the session had
    /// (nothing extra at first). Only an owner's value is kept.
    public var transferOptions: SessionTransferOptions?
    /// For a session this attach creates: false makes it a session whose events ferryd
    /// acknowledges itself whenever no process owns it, instead of keeping them for the next
    /// owner (the `ferry` CLI's sessions: ferryd delivers their files, and nobody comes back
    /// for their events). Only for a session of no app (an app's is relaunched for its
    /// events); ignored for a session that exists. nil or true: events are kept.
    public var keepsEvents: Bool?
    /// The configuration's `sessionSendsLaunchEvents`: false, and ferryd does not start the
    /// app for the session's events; they wait until it attaches. nil keeps what the session
    /// had (true at first). Only an owner's value is kept.
    public var sendsLaunchEvents: Bool?
    /// For an owner: ferryd pushes at most this many of the session's messages (events and
    /// progress) beyond the count the owner said it took (``Request/taken(_:)``), so a client
    /// slower than its events holds a bounded number of them; what waits, waits in ferryd's
    /// store. Progress that finds no room is dropped (the next one says more). nil: unpaced.
    public var eventWindow: Int?
    /// With an ``eventWindow``: ferryd also stops pushing the session's events while the
    /// payload bytes of those beyond the owner's count reach this many (one event may cross
    /// it), so large ones (a data task's body, up to ``EventKind/maximumDataSize`` each) cannot
    /// fill the window. The owner says `taken` at least every quarter of it, or ferryd waits
    /// for a count that never comes. nil: counted by messages only.
    public var eventByteWindow: Int?

    /// The window the library asks for (ferryd takes 1…``maximumEventWindow``).
    public static let defaultEventWindow = 256
    public static let maximumEventWindow = 65_536
    /// The byte window the library asks for (ferryd takes ``eventByteWindowRange``).
    public static let defaultEventByteWindow = 4 << 20
    public static let eventByteWindowRange = (64 << 10)...(1 << 30)

    public init(
        sessionIdentifier: String, sharedContainerIdentifier: String? = nil, owner: Bool = true,
        httpMaximumConnectionsPerHost: Int? = nil, networkAccess: NetworkAccess? = nil,
        transferOptions: SessionTransferOptions? = nil, keepsEvents: Bool? = nil, sendsLaunchEvents: Bool? = nil,
        eventWindow: Int? = nil, eventByteWindow: Int? = nil
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.sharedContainerIdentifier = sharedContainerIdentifier
        self.owner = owner
        self.httpMaximumConnectionsPerHost = httpMaximumConnectionsPerHost
        self.networkAccess = networkAccess
        self.transferOptions = transferOptions
        self.keepsEvents = keepsEvents
        self.sendsLaunchEvents = sendsLaunchEvents
        self.eventWindow = eventWindow
        self.eventByteWindow = eventByteWindow
    }
}

/// Names a session.
public struct SessionReference: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public init(sessionIdentifier: String) { self.sessionIdentifier = sessionIdentifier }
}

/// Asks for `count` task identifiers of a session in a row (nil: one), so that a process
/// making many tasks asks once for several; identifiers never used are skipped, not reused.
public struct TaskIdentifierReservation: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var count: Int?
    /// The most identifiers one request reserves.
    public static let maximumCount = 1000

    public init(sessionIdentifier: String, count: Int? = nil) {
        self.sessionIdentifier = sessionIdentifier
        self.count = count
    }
}

/// Asks for a session's tasks in identifier order, after a given identifier (nil: from the
/// first), at most `limit` (nil or above ``TaskPage/maximumCount``: that many).
public struct ListTasks: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var afterTaskIdentifier: Int?
    public var limit: Int?

    public init(sessionIdentifier: String, afterTaskIdentifier: Int? = nil, limit: Int? = nil) {
        self.sessionIdentifier = sessionIdentifier
        self.afterTaskIdentifier = afterTaskIdentifier
        self.limit = limit
    }
}

/// Names a task: identifiers are unique within their session.
public struct TaskReference: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var taskIdentifier: Int
    public init(sessionIdentifier: String, taskIdentifier: Int) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
    }
}

/// Ends a session: `invalidateAndCancel()` (cancelTasks) or `finishTasksAndInvalidate()`.
public struct Invalidate: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var cancelTasks: Bool
    public init(sessionIdentifier: String, cancelTasks: Bool) {
        self.sessionIdentifier = sessionIdentifier
        self.cancelTasks = cancelTasks
    }
}

/// Every stored event of the session with a sequence up to and including `upToSequence` has
/// been handled, and so have the events listed in `sequences` (beyond that point: a task that
/// ended while an earlier one is still open). ferryd deletes them all.
///
/// ```swift
/// Acknowledge(sessionIdentifier: "com.example.app.bg", upToSequence: 19, sequences: [22, 23])
/// ```
public struct Acknowledge: Hashable, Sendable, Codable {
    /// At most this many `sequences` in one request.
    public static let maximumSequences = 10_000

    public var sessionIdentifier: String
    public var upToSequence: Int64
    /// Single events after `upToSequence` (optional; a ferryd that predates it acknowledges
    /// only up to `upToSequence`, and those events come again).
    public var sequences: [Int64]?
    public init(sessionIdentifier: String, upToSequence: Int64, sequences: [Int64]? = nil) {
        self.sessionIdentifier = sessionIdentifier
        self.upToSequence = upToSequence
        self.sequences = sequences
    }
}

/// The owner of a paced session (``AttachSession/eventWindow``) took `count` of its pushed
/// messages from this connection since it attached on it (a running total: a late or merged
/// one never takes room back).
public struct EventsTaken: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var count: Int
    public init(sessionIdentifier: String, count: Int) {
        self.sessionIdentifier = sessionIdentifier
        self.count = count
    }
}

extension Request {
    /// Checks what can be checked without the daemon's state: identifiers present and in
    /// range, and a submission's fields (``TaskSubmission/validate()``).
    ///
    /// - Throws: ``FerryProtocolError/Code/badRequest`` naming the first field that is wrong.
    public func validate() throws(FerryProtocolError) {
        if let session = sessionIdentifier, session.isEmpty || session.utf8.count > 1024 {
            throw FerryProtocolError(.badRequest, "a session identifier has 1 to 1024 bytes")
        }
        switch self {
        case .submit(let submission):
            try submission.validate()
        case .suspend(let task), .resume(let task), .cancel(let task), .cancelProducingResumeData(let task):
            if task.taskIdentifier < 1 { throw FerryProtocolError(.badRequest, "task identifiers start at 1") }
        case .acknowledge(let ack):
            if ack.upToSequence < 0 { throw FerryProtocolError(.badRequest, "event sequences start at 1") }
            if let sequences = ack.sequences {
                if sequences.count > Acknowledge.maximumSequences {
                    throw FerryProtocolError(.badRequest, "acknowledge at most \(Acknowledge.maximumSequences) single sequences at once")
                }
                if sequences.contains(where: { $0 < 1 }) { throw FerryProtocolError(.badRequest, "event sequences start at 1") }
            }
        case .attach(let attach):
            if let group = attach.sharedContainerIdentifier, group.isEmpty || group.utf8.count > 1024 {
                throw FerryProtocolError(.badRequest, "an app group identifier has 1 to 1024 bytes")
            }
            if let limit = attach.httpMaximumConnectionsPerHost, !(1...64).contains(limit) {
                throw FerryProtocolError(.badRequest, "httpMaximumConnectionsPerHost is between 1 and 64")
            }
            if let window = attach.eventWindow, !(1...AttachSession.maximumEventWindow).contains(window) {
                throw FerryProtocolError(.badRequest, "eventWindow is between 1 and \(AttachSession.maximumEventWindow)")
            }
            if let bytes = attach.eventByteWindow {
                let range = AttachSession.eventByteWindowRange
                guard attach.eventWindow != nil else { throw FerryProtocolError(.badRequest, "eventByteWindow comes with an eventWindow") }
                guard range.contains(bytes) else {
                    throw FerryProtocolError(.badRequest, "eventByteWindow is between \(range.lowerBound) and \(range.upperBound)")
                }
            }
        case .taken(let taken):
            if taken.count < 0 { throw FerryProtocolError(.badRequest, "a taken count is not negative") }
        case .listTasks(let list):
            if let limit = list.limit, limit < 1 { throw FerryProtocolError(.badRequest, "a page holds at least one task") }
        case .reserveTaskIdentifier(let reservation):
            if let count = reservation.count, !(1...TaskIdentifierReservation.maximumCount).contains(count) {
                throw FerryProtocolError(.badRequest, "reserve 1 to \(TaskIdentifierReservation.maximumCount) task identifiers at a time")
            }
        case .answerChallenge(let reply):
            if reply.disposition == .useCredential, reply.credential == nil {
                throw FerryProtocolError(.badRequest, "useCredential needs a credential")
            }
            if let credential = reply.credential, credential.user.utf8.count + credential.password.utf8.count > 8192 {
                throw FerryProtocolError(.badRequest, "a credential has at most 8192 bytes")
            }
        case .listSessions, .invalidate, .status, .metrics, .stop:
            break
        }
    }
}
