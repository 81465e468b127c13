import Foundation
public import NIOCore

/// Turns messages into frame payloads (JSON) and back, and says clearly what is wrong with a
/// payload that is not a message. Decoding never traps, whatever the bytes.
///
/// ```swift
/// let coder = MessageCoder()
/// let payload = try coder.encode(ClientMessage.request(id: 1, .listSessions))
/// let message = try coder.decode(ClientMessage.self, from: payload)
/// ```
public struct MessageCoder: Sendable {
    public init() {}

    // One of each, set up once: they keep no state between calls (ferryd encodes a reply per
    // request, so making them anew each time showed in its profile).
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.dataEncodingStrategy = .base64
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        decoder.dataDecodingStrategy = .base64
        return decoder
    }()

    /// The JSON payload of one message: keys sorted, dates as seconds since 1970, bytes as base64.
    public func encode(_ message: some Encodable) throws(FerryProtocolError) -> ByteBuffer {
        try encodeWithEncoder(message)
    }

    /// `encode(_:)` through `JSONEncoder`, for the messages not written by hand.
    func encodeWithEncoder(_ message: some Encodable) throws(FerryProtocolError) -> ByteBuffer {
        do {
            return ByteBuffer(bytes: try Self.encoder.encode(message))
        } catch {
            throw FerryProtocolError(.internalError, "cannot encode \(type(of: message)): \(error)")
        }
    }

    /// The message in a frame's payload.
    ///
    /// - Throws: ``FerryProtocolError/Code/unknownMessageType`` for a `type` this build does not
    ///   know, ``FerryProtocolError/Code/malformedMessage`` for anything else that is not a valid
    ///   message (not JSON, a missing or mistyped field). Unknown fields are ignored.
    public func decode<Message: Decodable>(
        _ type: Message.Type, from payload: ByteBuffer
    ) throws(FerryProtocolError) -> Message {
        try decodeWithDecoder(type, from: payload)
    }

    /// `decode(_:from:)` through `JSONDecoder`, for the messages not read by hand.
    func decodeWithDecoder<Message: Decodable>(
        _ type: Message.Type, from payload: ByteBuffer
    ) throws(FerryProtocolError) -> Message {
        do {
            return try Self.decoder.decode(Message.self, from: Data(payload.readableBytesView))
        } catch let unknown as UnknownType {
            throw FerryProtocolError(
                .unknownMessageType,
                "unknown \(unknown.family) type \"\(unknown.name.prefix(64))\" for protocol version "
                    + "\(ProtocolVersion.current): the peer is newer than this build, or not a Ferry peer")
        } catch let error as FerryProtocolError {
            throw error
        } catch let error as DecodingError {
            throw FerryProtocolError(.malformedMessage, "not a valid \(Message.self): \(Self.describe(error))")
        } catch {
            throw FerryProtocolError(.malformedMessage, "not a valid \(Message.self): \(error)")
        }
    }

    /// A one-line reason: the field path and what was wrong, without the payload's contents.
    static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            let rendered = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return rendered.isEmpty ? "the top level" : String(rendered.dropFirst(rendered.hasPrefix(".") ? 1 : 0))
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing field \"\(key.stringValue)\" at \(path(context.codingPath))"
        case .typeMismatch(let type, let context):
            return "expected \(type) at \(path(context.codingPath))"
        case .valueNotFound(let type, let context):
            return "null where \(type) is required at \(path(context.codingPath))"
        case .dataCorrupted(let context):
            var reason = context.debugDescription.isEmpty ? "data corrupted" : context.debugDescription
            if let underlying = context.underlyingError {
                reason += " (\(String(describing: underlying).prefix(160)))"
            }
            if context.codingPath.isEmpty { return reason }
            return "\(reason) at \(path(context.codingPath))"
        @unknown default:
            return "\(error)"
        }
    }
}
