import FerryCore
import Foundation
import NIOCore

/// Reads the messages an app receives most without `JSONDecoder`: stored events, live
/// progress, and the answers to submissions (`FrequentTaskReader.swift`) and acknowledgements. When a thousand background tasks end at
/// once, an app spent a quarter of its CPU in the decoder for these, one message after another
/// on its connection's event loop.
///
/// It reads only what it fully understands, into the value `JSONDecoder` would give; for
/// anything else (another message, an unknown kind, a number written unusually, a repeated
/// key, bytes that are not JSON) it returns nil and the decoder decides, with its errors.
enum FrequentMessageReader {
    static func message(_ payload: ByteBuffer) -> DaemonMessage? {
        payload.withUnsafeReadableBytes { bytes in
            var parser = JSONParser(bytes)
            guard let root = parser.document(), case .object(let fields) = root else { return nil }
            return message(Fields(fields))
        }
    }

    private static func message(_ fields: Fields) -> DaemonMessage? {
        switch fields.string("type") {
        case "event": return event(fields).map { .event($0) }
        case "progress": return progress(fields).map { .progress($0) }
        case "reply":
            guard let id = fields.unsigned("requestID"), let reply = fields.object("reply") else { return nil }
            switch reply.string("type") {
            case "acknowledged":
                guard let session = reply.string("sessionIdentifier"), let upTo = reply.integer("upToSequence"),
                      let sequences = reply.optionalIntegers("sequences")
                else { return nil }
                return .reply(id: id, .acknowledged(Acknowledge(sessionIdentifier: session, upToSequence: upTo, sequences: sequences)))
            case "submitted":
                guard let existing = reply.bool("existing"), let task = reply.object("task").flatMap(taskInfo) else { return nil }
                return .reply(id: id, .submitted(Submitted(task: task, existing: existing)))
            default:
                return nil
            }
        default: return nil
        }
    }

    private static func event(_ fields: Fields) -> Event? {
        guard let sequence = fields.integer("sequence"), let session = fields.string("sessionIdentifier"),
              let task = fields.optionalInteger("taskIdentifier"), let kindFields = fields.object("kind"), let kind = kind(kindFields),
              let storedAt = fields.optionalNumber("storedAt"), let committedAt = fields.optionalNumber("committedAt")
        else { return nil }
        return Event(
            sequence: sequence, sessionIdentifier: session, taskIdentifier: task.map(Int.init), kind: kind,
            storedAt: storedAt.map(Date.init(timeIntervalSince1970:)), committedAt: committedAt.map(Date.init(timeIntervalSince1970:)))
    }

    private static func kind(_ fields: Fields) -> EventKind? {
        switch fields.string("type") {
        case "completed":
            return .completed
        case "downloadFinished":
            return fields.string("location").map { .downloadFinished(DownloadFinished(location: $0)) }
        case "data":
            return fields.string("bytes").flatMap { Data(base64Encoded: $0) }.map { .data($0) }
        case "failed":
            guard let code = fields.string("code"), let message = fields.string("message"),
                  let resumeData = fields.optionalString("resumeData") else { return nil }
            let data = resumeData.map { Data(base64Encoded: $0) }
            if case .some(nil) = data { return nil }
            return .failed(TransferFailure(code: code, message: message, resumeData: data.flatMap { $0 }))
        case "response":
            guard let status = fields.integer("statusCode"), let headers = fields.headers("headers"), let url = fields.optionalString("url") else { return nil }
            let parsed = url.map { URL(string: $0) }
            if case .some(nil) = parsed { return nil }
            return .response(ResponseHead(statusCode: Int(status), headers: headers, url: parsed.flatMap { $0 }))
        default:
            return nil
        }
    }

    private static func progress(_ fields: Fields) -> TaskProgress? {
        guard let session = fields.string("sessionIdentifier"), let task = fields.integer("taskIdentifier"),
              let sent = fields.integer("bytesSent"), let received = fields.integer("bytesReceived"),
              let toSend = fields.optionalInteger("bytesExpectedToSend"), let toReceive = fields.optionalInteger("bytesExpectedToReceive")
        else { return nil }
        return TaskProgress(
            sessionIdentifier: session, taskIdentifier: Int(task), bytesSent: sent, bytesReceived: received,
            bytesExpectedToSend: toSend, bytesExpectedToReceive: toReceive)
    }
}

/// A JSON value as read: numbers keep their text, to be read as the field's type asks.
enum JSONValue {
    case string(String)
    case number(String)
    case object([(String, JSONValue)])
    case array([JSONValue])
    case bool(Bool)
    case null
}

/// An object's fields by name. Each accessor answers nil when the field is missing or of
/// another type; the `optional…` ones answer `.some(nil)` for a missing or null field.
struct Fields {
    /// In the order written (a few each: a search is cheaper than a dictionary); no name twice,
    /// the parser refused repeats.
    let fields: [(String, JSONValue)]

    init(_ fields: [(String, JSONValue)]) { self.fields = fields }

    subscript(name: String) -> JSONValue? { fields.first { $0.0 == name }?.1 }

    func string(_ name: String) -> String? {
        if case .string(let text)? = self[name] { return text }
        return nil
    }

    func object(_ name: String) -> Fields? {
        if case .object(let fields)? = self[name] { return Fields(fields) }
        return nil
    }

    func array(_ name: String) -> [JSONValue]? {
        if case .array(let items)? = self[name] { return items }
        return nil
    }

    func integer(_ name: String) -> Int64? { self[name].flatMap(Self.integer) }

    func bool(_ name: String) -> Bool? {
        if case .bool(let value)? = self[name] { return value }
        return nil
    }

    /// Header fields as the protocol writes them: `[name, value]` pairs, in order.
    func headers(_ name: String) -> HeaderFields? {
        guard let list = array(name) else { return nil }
        var headers = HeaderFields()
        for pair in list {
            guard case .array(let parts) = pair, parts.count == 2, case .string(let name) = parts[0], case .string(let value) = parts[1] else { return nil }
            headers.add(name: name, value: value)
        }
        return headers
    }

    /// Only plain integer text (`-12`, not `12.0` or `1e2`, which the decoder judges).
    static func integer(_ value: JSONValue) -> Int64? {
        guard case .number(let text) = value, !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }) else { return nil }
        return Int64(text)
    }

    func unsigned(_ name: String) -> UInt64? {
        guard case .number(let text)? = self[name], text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt64(text)
    }

    func number(_ name: String) -> Double? {
        if case .number(let text)? = self[name] { return Double(text) }
        return nil
    }

    /// An array of plain integers (each read as a single `integer` field is).
    func integers(_ name: String) -> [Int64]? {
        guard let items = array(name) else { return nil }
        var numbers: [Int64] = []
        numbers.reserveCapacity(items.count)
        for item in items {
            guard let number = Self.integer(item) else { return nil }
            numbers.append(number)
        }
        return numbers
    }

    func optionalInteger(_ name: String) -> Int64?? { optional(name, integer) }
    func optionalNumber(_ name: String) -> Double?? { optional(name, number) }
    func optionalString(_ name: String) -> String?? { optional(name, string) }
    func optionalIntegers(_ name: String) -> [Int64]?? { optional(name, integers) }

    /// A missing or null field is `.some(nil)`; any other is what `read` makes of it (nil: none).
    func optional<T>(_ name: String, _ read: (String) -> T?) -> T?? {
        switch self[name] {
        case nil, .null?: return .some(nil)
        default: return read(name).map { .some($0) }
        }
    }
}

/// A strict JSON reader over bytes (RFC 8259): nil at the first thing it does not accept.
private struct JSONParser {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    private var depth = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// One value and nothing after it but white space.
    mutating func document() -> JSONValue? {
        guard let value = value() else { return nil }
        skipSpace()
        return index == bytes.count ? value : nil
    }

    private mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    private mutating func value() -> JSONValue? {
        skipSpace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string().map { .string($0) }
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return number()
        }
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { return nil }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return nil }
        index += count
        return value
    }

    private mutating func object() -> JSONValue? {
        var fields: [(String, JSONValue)] = []
        let whole = elements(closing: UInt8(ascii: "}")) { parser in
            guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "\""), let name = parser.string(),
                  !fields.contains(where: { $0.0 == name }) else { return false }
            parser.skipSpace()
            guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: ":") else { return false }
            parser.index += 1
            guard let value = parser.value() else { return false }
            fields.append((name, value))
            return true
        }
        return whole ? .object(fields) : nil
    }

    private mutating func array() -> JSONValue? {
        var items: [JSONValue] = []
        let whole = elements(closing: UInt8(ascii: "]")) { parser in
            guard let item = parser.value() else { return false }
            items.append(item)
            return true
        }
        return whole ? .array(items) : nil
    }

    /// The elements of an object or array, from its opening byte to `closing`, each read by
    /// `element` (false: not one) and separated by commas; at most 32 levels deep.
    private mutating func elements(closing: UInt8, _ element: (inout JSONParser) -> Bool) -> Bool {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 32 else { return false }
        index += 1  // { or [
        skipSpace()
        if index < bytes.count, bytes[index] == closing {
            index += 1
            return true
        }
        while true {
            skipSpace()
            guard element(&self) else { return false }
            skipSpace()
            guard index < bytes.count else { return false }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == closing {
                index += 1
                return true
            } else {
                return false
            }
        }
    }

    /// A string's text; escapes undone; nil for a control character, a bad escape, a lone
    /// surrogate or bytes that are not UTF-8.
    private mutating func string() -> String? {
        index += 1  // "
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { return escapedString(from: start) }
            if byte < 0x20 { return nil }
            index += 1
        }
        return nil
    }

    private mutating func escapedString(from start: Int) -> String? {
        var text = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escape)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"):
                    guard let unit = hex4() else { return nil }
                    var scalar: Unicode.Scalar?
                    if (0xD800..<0xDC00).contains(unit) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { return nil }
                        index += 2
                        guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                    } else {
                        scalar = Unicode.Scalar(unit)  // nil for a lone low surrogate
                    }
                    guard let scalar else { return nil }
                    text.append(contentsOf: String(scalar).utf8)
                default:
                    return nil
                }
            default:
                if byte < 0x20 { return nil }
                text.append(byte)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, kept as text.
    private mutating func number() -> JSONValue? {
        let start = index
        func digits(_ parser: inout JSONParser) -> Int {
            let first = parser.index
            while parser.index < parser.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index]) { parser.index += 1 }
            return parser.index - first
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits(&self) > 0 else { return nil }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { return nil }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { return nil }
        }
        return .number(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
    }
}
