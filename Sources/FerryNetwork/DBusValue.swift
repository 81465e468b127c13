/// A D-Bus type, as a signature spells it (`s`, `ao`, `a{sv}`, `(iu)`…). ferryd speaks just
/// enough D-Bus to read NetworkManager (docs/ferryd.md, "Network"); every type is parsed so
/// that any message on the bus can be read past, even when only a few are used.
indirect enum DBusType: Hashable, Sendable {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD, variant
    case array(DBusType)
    /// Only as an array's element: `a{KV}`, K a basic type.
    case dictEntry(key: DBusType, value: DBusType)
    case structure([DBusType])

    /// The signature's code for this type.
    var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// The boundary a value of this type starts on, from the message's start.
    var alignment: Int {
        switch self {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .unixFD, .string, .objectPath, .array: 4
        case .int64, .uint64, .double, .dictEntry, .structure: 8
        }
    }

    var isBasic: Bool {
        switch self {
        case .variant, .array, .dictEntry, .structure: false
        default: true
        }
    }

    /// The complete types of `signature`, in order. At most 255 bytes, 32 arrays and 32
    /// structures deep, as the specification allows.
    static func parse(_ signature: String) throws(DBusError) -> [DBusType] {
        let codes = Array(signature.utf8)
        guard codes.count <= 255 else { throw .protocolViolation("a signature of \(codes.count) bytes (at most 255)") }
        var offset = 0
        var types: [DBusType] = []
        while offset < codes.count { types.append(try parseOne(codes, &offset, arrays: 0, structures: 0)) }
        return types
    }

    private static func parseOne(_ codes: [UInt8], _ offset: inout Int, arrays: Int, structures: Int) throws(DBusError) -> DBusType {
        guard offset < codes.count else { throw .protocolViolation("signature ends inside a type") }
        let code = codes[offset]
        offset += 1
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrays < 32 else { throw .protocolViolation("arrays nested more than 32 deep") }
            if offset < codes.count, codes[offset] == UInt8(ascii: "{") {
                offset += 1
                let key = try parseOne(codes, &offset, arrays: arrays + 1, structures: structures)
                guard key.isBasic else { throw .protocolViolation("a dictionary key of type \(key.signature)") }
                let value = try parseOne(codes, &offset, arrays: arrays + 1, structures: structures)
                guard offset < codes.count, codes[offset] == UInt8(ascii: "}") else { throw .protocolViolation("a dictionary entry of more than two types") }
                offset += 1
                return .array(.dictEntry(key: key, value: value))
            }
            return .array(try parseOne(codes, &offset, arrays: arrays + 1, structures: structures))
        case UInt8(ascii: "("):
            guard structures < 32 else { throw .protocolViolation("structures nested more than 32 deep") }
            var fields: [DBusType] = []
            while offset < codes.count, codes[offset] != UInt8(ascii: ")") {
                fields.append(try parseOne(codes, &offset, arrays: arrays, structures: structures + 1))
            }
            guard offset < codes.count, !fields.isEmpty else { throw .protocolViolation("an empty or unclosed structure") }
            offset += 1
            return .structure(fields)
        default:
            throw .protocolViolation("signature code '\(Character(Unicode.Scalar(code)))'")
        }
    }
}

/// A D-Bus value. An array carries its element type, so that an empty one has a signature.
indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8), boolean(Bool), int16(Int16), uint16(UInt16), int32(Int32), uint32(UInt32), int64(Int64), uint64(UInt64)
    case double(Double)
    case string(String), objectPath(String), signature(String)
    /// An index into the message's file descriptors (ferryd asks for none).
    case unixFD(UInt32)
    case variant(DBusValue)
    case array(DBusType, [DBusValue])
    case dictEntry(DBusValue, DBusValue)
    case structure([DBusValue])

    var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .variant: .variant
        case .array(let element, _): .array(element)
        case .dictEntry(let key, let value): .dictEntry(key: key.type, value: value.type)
        case .structure(let fields): .structure(fields.map(\.type))
        }
    }

    /// `a{sv}` from a dictionary (the variants made here).
    static func properties(_ values: [String: DBusValue]) -> DBusValue {
        .array(.dictEntry(key: .string, value: .variant), values.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) })
    }

    /// `ao` from paths.
    static func objectPaths(_ paths: [String]) -> DBusValue { .array(.objectPath, paths.map { .objectPath($0) }) }

    // Readers of the few shapes ferryd asks for; nil for any other shape. A variant is looked through.

    /// A string, object path or signature.
    var string: String? {
        switch self {
        case .string(let text), .objectPath(let text), .signature(let text): text
        case .variant(let inner): inner.string
        default: nil
        }
    }

    var uint32: UInt32? {
        switch self {
        case .uint32(let value): value
        case .variant(let inner): inner.uint32
        default: nil
        }
    }

    var boolean: Bool? {
        switch self {
        case .boolean(let value): value
        case .variant(let inner): inner.boolean
        default: nil
        }
    }

    /// The elements of an array (`ao`, `as`…).
    var elements: [DBusValue]? {
        switch self {
        case .array(_, let elements): elements
        case .variant(let inner): inner.elements
        default: nil
        }
    }

    /// An array of string keys (`a{sv}`, `a{ss}`…) as a dictionary, each variant unwrapped once.
    var dictionary: [String: DBusValue]? {
        guard let elements else { return nil }
        var result: [String: DBusValue] = [:]
        for element in elements {
            guard case .dictEntry(let key, let value) = element, let name = key.string else { return nil }
            if case .variant(let inner) = value { result[name] = inner } else { result[name] = value }
        }
        return result
    }
}
