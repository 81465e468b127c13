/// Every message ferryd sends to a client.
///
/// The first is ``welcome(_:)`` or ``refused(_:)`` (then the connection closes). After a
/// welcome: one ``reply(id:_:)`` or ``failure(id:_:)`` per request, echoing its id, and pushes
/// at any time: stored ``event(_:)``s (owning connections only; acknowledge them), live
/// ``progress(_:)``, ``eventsFinished(sessionIdentifier:)``, and ``goodbye(_:)`` before ferryd
/// closes a connection for a reason.
///
/// ```swift
/// switch try coder.decode(DaemonMessage.self, from: payload) {
/// case .event(let event): handle(event); acknowledge(upTo: event.sequence)
/// case .progress(let progress): show(progress)
/// default: break
/// }
/// ```
public enum DaemonMessage: Hashable, Sendable {
    case welcome(Welcome)
    /// The handshake failed (``FerryProtocolError/Code/unsupportedVersion``…); the connection closes.
    case refused(FerryProtocolError)
    case reply(id: UInt64, Reply)
    case failure(id: UInt64, FerryProtocolError)
    /// A stored event; delivered again until acknowledged.
    case event(Event)
    /// Live progress; not stored, not acknowledged.
    case progress(TaskProgress)
    /// A task of an owned session that asks for it (``NetworkAccess/waitsForConnectivity``)
    /// waits for the network: the app's `taskIsWaitingForConnectivity`, once per task. Not stored.
    case waitingForConnectivity(TaskWaiting)
    /// Every stored event of the session has been delivered: the app's `didFinishEvents`.
    case eventsFinished(sessionIdentifier: String)
    /// Events wait for another background session of this connection's app, which no process
    /// owns: attach to it (`handleEventsForBackgroundURLSession` for an app that is running).
    /// Sent instead of starting a second copy of the app, only to a client whose hello said
    /// ``Hello/handlesEventsForOtherSessions``.
    case eventsWaiting(sessionIdentifier: String)
    /// ferryd is closing the connection, and why (a bad frame, shutdown).
    case goodbye(FerryProtocolError)
    /// A task of an owned session met an HTTP authentication challenge: answer it with
    /// ``Request/answerChallenge(_:)``. Sent only to a client whose hello said
    /// ``Hello/answersChallenges``. Not stored.
    case challenge(TaskChallenge)

    /// The `type` this message is written with, for logs.
    public var typeName: String { tag.rawValue }

    enum Tag: String, TypeTag {
        case welcome, refused, reply, failure, event, progress, waitingForConnectivity, eventsFinished, eventsWaiting, goodbye
        case challenge
        static var family: String { "message" }
    }

    var tag: Tag {
        switch self {
        case .welcome: .welcome
        case .refused: .refused
        case .reply: .reply
        case .failure: .failure
        case .event: .event
        case .progress: .progress
        case .waitingForConnectivity: .waitingForConnectivity
        case .eventsFinished: .eventsFinished
        case .eventsWaiting: .eventsWaiting
        case .goodbye: .goodbye
        case .challenge: .challenge
        }
    }
}

extension DaemonMessage: Codable {
    public init(from decoder: any Decoder) throws {
        switch try decoder.tag(Tag.self) {
        case .welcome: self = .welcome(try Welcome(from: decoder))
        case .refused: self = .refused(try decoder.field("error"))
        case .reply: self = .reply(id: try decoder.field("requestID"), try decoder.field("reply"))
        case .failure: self = .failure(id: try decoder.field("requestID"), try decoder.field("error"))
        case .event: self = .event(try Event(from: decoder))
        case .progress: self = .progress(try TaskProgress(from: decoder))
        case .waitingForConnectivity: self = .waitingForConnectivity(try TaskWaiting(from: decoder))
        case .eventsFinished: self = .eventsFinished(sessionIdentifier: try decoder.field("sessionIdentifier"))
        case .eventsWaiting: self = .eventsWaiting(sessionIdentifier: try decoder.field("sessionIdentifier"))
        case .goodbye: self = .goodbye(try decoder.field("error"))
        case .challenge: self = .challenge(try TaskChallenge(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .welcome(let welcome): try encoder.encode(tag: tag, payload: welcome)
        case .refused(let error), .goodbye(let error): try encoder.encode(tag: tag, fields: ["error": error])
        case .reply(let id, let reply): try encoder.encode(tag: tag, fields: ["requestID": id, "reply": reply])
        case .failure(let id, let error): try encoder.encode(tag: tag, fields: ["requestID": id, "error": error])
        case .event(let event): try encoder.encode(tag: tag, payload: event)
        case .progress(let progress): try encoder.encode(tag: tag, payload: progress)
        case .waitingForConnectivity(let waiting): try encoder.encode(tag: tag, payload: waiting)
        case .eventsFinished(let session), .eventsWaiting(let session): try encoder.encode(tag: tag, fields: ["sessionIdentifier": session])
        case .challenge(let challenge): try encoder.encode(tag: tag, payload: challenge)
        }
    }
}
