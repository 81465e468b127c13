public import FerryCore
public import Foundation

/// A stored event of a background session, pushed to the owning connection in order.
///
/// ferryd deletes events only when the client acknowledges them (``Request/acknowledge(_:)``);
/// until then a reconnecting client gets them again, so a client drops any `sequence` it has
/// already handled. Sequence numbers only grow, and are never reused.
///
/// ```swift
/// let event = Event(sequence: 12, sessionIdentifier: "com.example.bg", taskIdentifier: 3, kind: .completed)
/// ```
public struct Event: Hashable, Sendable, Codable {
    public var sequence: Int64
    public var sessionIdentifier: String
    /// nil for an event about the session as a whole.
    public var taskIdentifier: Int?
    public var kind: EventKind
    /// When ferryd stored it (with the task's change that made it: the moment its transaction
    /// began): a client can tell how long it took to arrive. nil from a ferryd that does not say.
    public var storedAt: Date?
    /// When that transaction's commit returned, the event on disk, for an event ferryd hands
    /// over as it commits; nil for one read back from its store (after a restart, to a new
    /// owner). `committedAt - storedAt` is the wait for durability (a disk sync).
    public var committedAt: Date?

    public init(
        sequence: Int64, sessionIdentifier: String, taskIdentifier: Int?, kind: EventKind, storedAt: Date? = nil, committedAt: Date? = nil
    ) {
        self.sequence = sequence
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.kind = kind
        self.storedAt = storedAt
        self.committedAt = committedAt
    }
}

/// What happened. `completed` and `failed` are a task's last event.
public enum EventKind: Hashable, Sendable {
    /// The response head arrived.
    case response(ResponseHead)
    /// Part of a data or upload task's response body (at most ``EventKind/maximumDataSize`` bytes).
    case data(Data)
    /// A download's file is complete at this path; move it during the callback.
    case downloadFinished(DownloadFinished)
    /// The task finished with a response.
    case completed
    /// The task failed or was cancelled; `code` uses the library's `FerryError` codes.
    case failed(TransferFailure)

    /// The largest body chunk one event carries, so that an event fits a frame with room to
    /// spare after base64.
    public static let maximumDataSize = 256 * 1024

    /// The `type` this event is written with, for logs.
    public var typeName: String { tag.rawValue }

    /// Whether `typeName` names a kind this build knows (a stored event's, before it is sent as stored).
    public static func isKnown(typeName: String) -> Bool { Tag(rawValue: typeName) != nil }

    enum Tag: String, TypeTag {
        case response, data, downloadFinished, completed, failed
        static var family: String { "event" }
    }

    var tag: Tag {
        switch self {
        case .response: .response
        case .data: .data
        case .downloadFinished: .downloadFinished
        case .completed: .completed
        case .failed: .failed
        }
    }
}

extension EventKind: Codable {
    public init(from decoder: any Decoder) throws {
        switch try decoder.tag(Tag.self) {
        case .response: self = .response(try ResponseHead(from: decoder))
        case .data: self = .data(try decoder.field("bytes"))
        case .downloadFinished: self = .downloadFinished(try DownloadFinished(from: decoder))
        case .completed: self = .completed
        case .failed: self = .failed(try TransferFailure(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .response(let head): try encoder.encode(tag: tag, payload: head)
        case .data(let bytes): try encoder.encode(tag: tag, fields: ["bytes": bytes])
        case .downloadFinished(let finished): try encoder.encode(tag: tag, payload: finished)
        case .completed: try encoder.encode(tag: tag)
        case .failed(let failure): try encoder.encode(tag: tag, payload: failure)
        }
    }
}

/// A response's status and header fields.
public struct ResponseHead: Hashable, Sendable, Codable {
    public var statusCode: Int
    public var headers: HeaderFields
    /// The URL that answered, after the redirects ferryd followed; nil from older daemons.
    public var url: URL?
    public init(statusCode: Int, headers: HeaderFields = [:], url: URL? = nil) {
        self.statusCode = statusCode
        self.headers = headers
        self.url = url
    }
}

/// Where a finished download is.
public struct DownloadFinished: Hashable, Sendable, Codable {
    public var location: String
    public init(location: String) { self.location = location }
}

/// Why a task ended without success, in the library's words.
public struct TransferFailure: Hashable, Sendable, Codable {
    /// A `FerryError.Code` name: "cancelled", "timedOut", "networkConnectionLost"…
    public var code: String
    public var message: String
    /// For a download that can continue: give it back in a ``TaskSubmission``.
    public var resumeData: Data?

    public init(code: String, message: String, resumeData: Data? = nil) {
        self.code = code
        self.message = message
        self.resumeData = resumeData
    }
}

/// Live progress of one task: totals so far, not deltas. Not stored.
public struct TaskProgress: Hashable, Sendable, Codable {
    public var sessionIdentifier: String
    public var taskIdentifier: Int
    public var bytesSent: Int64
    public var bytesReceived: Int64
    public var bytesExpectedToSend: Int64?
    public var bytesExpectedToReceive: Int64?

    public init(
        sessionIdentifier: String, taskIdentifier: Int, bytesSent: Int64 = 0, bytesReceived: Int64 = 0,
        bytesExpectedToSend: Int64? = nil, bytesExpectedToReceive: Int64? = nil
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.bytesExpectedToSend = bytesExpectedToSend
        self.bytesExpectedToReceive = bytesExpectedToReceive
    }
}
