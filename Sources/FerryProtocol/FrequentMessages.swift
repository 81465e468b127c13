import FerryCore
import Foundation
public import NIOCore

/// The messages ferryd writes most, without `JSONEncoder` (and those an app reads most,
/// without `JSONDecoder`: ``decode(_:from:)``): a running task's progress, the end
/// of a batch of events, an app's `submit` and the `submitted` and `acknowledged` replies
/// (`FrequentTaskWriter.swift`), and the `response`, `data` and `completed` kinds stored with every completion. A
/// thousand transfers ending together spent a tenth of ferryd's CPU in the encoder for these.
/// The text is what the encoder writes (keys sorted, the same escapes), so each decodes to the
/// same value; the other messages and kinds go through the encoder as before.
extension MessageCoder {
    /// The JSON payload of `message`.
    ///
    /// ```swift
    /// let payload = try MessageCoder().encode(DaemonMessage.eventsFinished(sessionIdentifier: "com.example.bg"))
    /// ```
    public func encode(_ message: DaemonMessage) throws(FerryProtocolError) -> ByteBuffer {
        switch message {
        case .progress(let progress):
            var text = "{"
            if let expected = progress.bytesExpectedToReceive { text += #""bytesExpectedToReceive":\#(expected),"# }
            if let expected = progress.bytesExpectedToSend { text += #""bytesExpectedToSend":\#(expected),"# }
            text += #""bytesReceived":\#(progress.bytesReceived),"bytesSent":\#(progress.bytesSent),"#
            text += #""sessionIdentifier":"# + Self.quoted(progress.sessionIdentifier)
            text += #","taskIdentifier":\#(progress.taskIdentifier),"type":"progress"}"#
            return ByteBuffer(string: text)
        case .eventsFinished(let session):
            return ByteBuffer(string: #"{"sessionIdentifier":"# + Self.quoted(session) + #","type":"eventsFinished"}"#)
        case .reply(let id, let reply):
            guard let text = Self.frequentReply(id: id, reply) else { return try encodeWithEncoder(message) }
            return ByteBuffer(string: text)
        default:
            return try encodeWithEncoder(message)
        }
    }

    /// The JSON payload of `message`: a submission written by hand (``TaskSubmission``'s coding,
    /// unless it carries credentials), the others through the encoder.
    ///
    /// ```swift
    /// let payload = try MessageCoder().encode(ClientMessage.request(id: 1, .submit(submission)))
    /// ```
    public func encode(_ message: ClientMessage) throws(FerryProtocolError) -> ByteBuffer {
        guard case .request(let id, .submit(let submission)) = message, var task = Self.submissionObject(submission) else {
            return try encodeWithEncoder(message)
        }
        task.add("type", #""submit""#)
        var request = JSONObject()
        request.add("request", task.text)
        request.add("requestID", String(id))
        request.add("type", #""request""#)
        return ByteBuffer(string: request.text)
    }

    /// The message in a frame from ferryd: events, progress and the answers to
    /// acknowledgements read by hand (``FrequentMessageReader``), the others through
    /// `JSONDecoder`, which also gives the errors.
    ///
    /// ```swift
    /// if case .event(let event) = try MessageCoder().decode(DaemonMessage.self, from: payload) { handle(event) }
    /// ```
    public func decode(_ type: DaemonMessage.Type, from payload: ByteBuffer) throws(FerryProtocolError) -> DaemonMessage {
        if let message = FrequentMessageReader.message(payload) { return message }
        return try decodeWithDecoder(type, from: payload)
    }

    /// The JSON of an event's kind, as ferryd stores it.
    ///
    /// ```swift
    /// let stored = String(buffer: try MessageCoder().encode(EventKind.completed))
    /// ```
    public func encode(_ kind: EventKind) throws(FerryProtocolError) -> ByteBuffer {
        switch kind {
        case .completed:
            return ByteBuffer(string: #"{"type":"completed"}"#)
        case .data(let bytes):
            return ByteBuffer(string: #"{"bytes":""# + bytes.base64EncodedString() + #"","type":"data"}"#)
        case .response(let head):
            // The encoder's shape: the head's fields beside `type`, each header a [name, value]
            // pair, the URL as its absolute string (left out when nil).
            var text = #"{"headers":"# + Self.headersArray(head.headers)
            text += #","statusCode":\#(head.statusCode),"type":"response""#
            if let url = head.url { text += #","url":"# + Self.quoted(url.absoluteString) }
            return ByteBuffer(string: text + "}")
        default:
            return try encodeWithEncoder(kind)
        }
    }

    /// Header fields as `[name, value]` pairs, in order.
    static func headersArray(_ headers: HeaderFields) -> String {
        var text = "["
        for (index, field) in headers.enumerated() {
            if index > 0 { text += "," }
            text += "[" + quoted(field.name) + "," + quoted(field.value) + "]"
        }
        return text + "]"
    }

    /// `text` as a JSON string, escaped as `JSONEncoder` escapes (with `withoutEscapingSlashes`):
    /// quote, backslash and the control characters; the rest as it is, in UTF-8.
    static func quoted(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            return "\"" + text + "\""
        }
        var quoted = "\""
        quoted.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            case "\u{08}": quoted += "\\b"
            case "\u{0C}": quoted += "\\f"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                quoted += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
