/// Every message a client (the Ferry library, the `ferry` CLI) sends to ferryd.
///
/// The first message on a connection is ``hello(_:)``; every later one is a ``request(id:_:)``
/// whose reply, or failure, echoes the client-chosen `id`.
///
/// ```swift
/// let message = ClientMessage.request(id: 7, .attach(AttachSession(
///     sessionIdentifier: "com.example.app.bg", sharedContainerIdentifier: "group.example", owner: true)))
/// let frame = try FrameEncoder.frame(try MessageCoder().encode(message))
/// ```
public enum ClientMessage: Hashable, Sendable {
    case hello(Hello)
    case request(id: UInt64, Request)

    /// The `type` this message is written with, for logs.
    public var typeName: String { tag.rawValue }

    enum Tag: String, TypeTag {
        case hello, request
        static var family: String { "message" }
    }

    var tag: Tag {
        switch self {
        case .hello: .hello
        case .request: .request
        }
    }
}

extension ClientMessage: Codable {
    public init(from decoder: any Decoder) throws {
        switch try decoder.tag(Tag.self) {
        case .hello: self = .hello(try Hello(from: decoder))
        case .request: self = .request(id: try decoder.field("requestID"), try decoder.field("request"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .hello(let hello): try encoder.encode(tag: tag, payload: hello)
        case .request(let id, let request): try encoder.encode(tag: tag, fields: ["requestID": id, "request": request])
        }
    }
}
