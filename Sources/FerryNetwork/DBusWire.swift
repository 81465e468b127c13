import Glibc

/// What went wrong talking D-Bus. Each says what, in words a log reader can act on.
enum DBusError: Error, CustomStringConvertible, Equatable {
    /// The bus address cannot be used (`unix:path=…` and `unix:abstract=…` are understood).
    case address(String)
    /// A system call on the bus's socket failed.
    case system(call: String, errno: Int32)
    /// The bus refused ferryd's `EXTERNAL` authentication, or answered it oddly.
    case authentication(String)
    /// The bus sent something the specification does not allow (or ferryd's bounds do not).
    case protocolViolation(String)
    /// A message longer than the connection accepts.
    case messageTooLarge(length: Int, limit: Int)
    case timedOut(String)
    /// The bus closed the connection.
    case closed
    /// An error reply: its name (`org.freedesktop.DBus.Error.NameHasNoOwner`) and message.
    case remote(name: String, message: String)

    var description: String {
        switch self {
        case .address(let text): "D-Bus address: \(text)"
        case .system(let call, let errno): "D-Bus socket: \(call): \(String(cString: strerror(errno)))"
        case .authentication(let text): "D-Bus authentication: \(text)"
        case .protocolViolation(let text): "D-Bus protocol: \(text)"
        case .messageTooLarge(let length, let limit): "D-Bus message of \(length) bytes (at most \(limit))"
        case .timedOut(let what): "D-Bus: no answer in time to \(what)"
        case .closed: "D-Bus: the bus closed the connection"
        case .remote(let name, let message): "\(name): \(message)"
        }
    }
}

/// Marshals values the D-Bus way, little-endian: each value aligned to its type's boundary,
/// counted from the start of the message.
struct DBusWriter {
    private(set) var bytes: [UInt8] = []

    mutating func align(_ boundary: Int) {
        while bytes.count % boundary != 0 { bytes.append(0) }
    }

    mutating func append<T: FixedWidthInteger>(_ value: T) {
        align(MemoryLayout<T>.size)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func write(_ value: DBusValue) throws(DBusError) {
        switch value {
        case .byte(let byte): bytes.append(byte)
        case .boolean(let flag): append(UInt32(flag ? 1 : 0))
        case .int16(let number): append(number)
        case .uint16(let number): append(number)
        case .int32(let number): append(number)
        case .uint32(let number), .unixFD(let number): append(number)
        case .int64(let number): append(number)
        case .uint64(let number): append(number)
        case .double(let number): append(number.bitPattern)
        case .string(let text), .objectPath(let text):
            let utf8 = Array(text.utf8)
            guard !utf8.contains(0) else { throw .protocolViolation("a string with a NUL byte") }
            append(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
            bytes.append(0)
        case .signature(let text):
            let utf8 = Array(text.utf8)
            guard utf8.count <= 255 else { throw .protocolViolation("a signature of \(utf8.count) bytes (at most 255)") }
            bytes.append(UInt8(utf8.count))
            bytes.append(contentsOf: utf8)
            bytes.append(0)
        case .variant(let inner):
            try write(.signature(inner.type.signature))
            try write(inner)
        case .array(let element, let elements):
            append(UInt32(0))
            let lengthAt = bytes.count - 4
            align(element.alignment)  // padding before the first element is not counted
            let start = bytes.count
            for item in elements {
                guard item.type == element else { throw .protocolViolation("an array of \(element.signature) holding a \(item.type.signature)") }
                try write(item)
            }
            let length = bytes.count - start
            guard length <= DBusReader.maximumArrayLength else { throw .messageTooLarge(length: length, limit: DBusReader.maximumArrayLength) }
            withUnsafeBytes(of: UInt32(length).littleEndian) { bytes.replaceSubrange(lengthAt..<(lengthAt + 4), with: $0) }
        case .dictEntry(let key, let value):
            align(8)
            try write(key)
            try write(value)
        case .structure(let fields):
            align(8)
            for field in fields { try write(field) }
        }
    }
}

/// Unmarshals values from one whole message in either byte order, checking every length
/// against what is left so that a bad message is an error, never a crash or a long loop.
struct DBusReader {
    /// The specification's limit for one array's bytes.
    static let maximumArrayLength = 64 << 20
    /// Variants inside variants (the specification's limit for all containers together).
    static let maximumDepth = 64

    let bytes: [UInt8]
    let bigEndian: Bool
    private(set) var offset: Int

    init(_ bytes: [UInt8], bigEndian: Bool, offset: Int = 0) {
        self.bytes = bytes
        self.bigEndian = bigEndian
        self.offset = offset
    }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func align(_ boundary: Int) throws(DBusError) {
        let aligned = (offset + boundary - 1) / boundary * boundary
        guard aligned <= bytes.count else { throw .protocolViolation("a message ends inside its padding") }
        offset = aligned
    }

    mutating func take(_ count: Int) throws(DBusError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - offset else { throw .protocolViolation("a value runs past the end of its message") }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws(DBusError) -> T {
        try align(MemoryLayout<T>.size)
        let slice = try take(MemoryLayout<T>.size)
        var value = T.zero
        for byte in (bigEndian ? Array(slice) : slice.reversed()) { value = value << 8 | T(byte) }
        return value
    }

    mutating func read(_ type: DBusType, depth: Int = 0) throws(DBusError) -> DBusValue {
        guard depth <= Self.maximumDepth else { throw .protocolViolation("values nested more than \(Self.maximumDepth) deep") }
        switch type {
        case .byte: return .byte(try take(1).first!)
        case .boolean:
            let flag = try integer(UInt32.self)
            guard flag <= 1 else { throw .protocolViolation("a boolean of \(flag)") }
            return .boolean(flag == 1)
        case .int16: return .int16(try integer(Int16.self))
        case .uint16: return .uint16(try integer(UInt16.self))
        case .int32: return .int32(try integer(Int32.self))
        case .uint32: return .uint32(try integer(UInt32.self))
        case .unixFD: return .unixFD(try integer(UInt32.self))
        case .int64: return .int64(try integer(Int64.self))
        case .uint64: return .uint64(try integer(UInt64.self))
        case .double: return .double(Double(bitPattern: try integer(UInt64.self)))
        case .string: return .string(try text(length: Int(try integer(UInt32.self))))
        case .objectPath:
            let path = try text(length: Int(try integer(UInt32.self)))
            guard path.hasPrefix("/") else { throw .protocolViolation("an object path '\(path.prefix(80))'") }
            return .objectPath(path)
        case .signature: return .signature(try text(length: Int(try take(1).first!)))
        case .variant:
            let inner = try DBusType.parse(try text(length: Int(try take(1).first!)))
            guard inner.count == 1 else { throw .protocolViolation("a variant of \(inner.count) types") }
            return .variant(try read(inner[0], depth: depth + 1))
        case .array(let element):
            let length = Int(try integer(UInt32.self))
            guard length <= Self.maximumArrayLength else { throw .messageTooLarge(length: length, limit: Self.maximumArrayLength) }
            try align(element.alignment)
            let end = offset + length
            guard end <= bytes.count else { throw .protocolViolation("an array runs past the end of its message") }
            var elements: [DBusValue] = []
            while offset < end { elements.append(try read(element, depth: depth + 1)) }
            guard offset == end else { throw .protocolViolation("an array's elements overrun its length") }
            return .array(element, elements)
        case .dictEntry(let key, let value):
            try align(8)
            return .dictEntry(try read(key, depth: depth + 1), try read(value, depth: depth + 1))
        case .structure(let fields):
            try align(8)
            var values: [DBusValue] = []
            for field in fields { values.append(try read(field, depth: depth + 1)) }
            return .structure(values)
        }
    }

    /// `length` bytes of UTF-8 and the NUL after them.
    private mutating func text(length: Int) throws(DBusError) -> String {
        let utf8 = try take(length)
        guard try take(1).first == 0 else { throw .protocolViolation("a string without its NUL") }
        guard !utf8.contains(0), let text = String(validating: utf8, as: UTF8.self) else {
            throw .protocolViolation("a string that is not UTF-8")
        }
        return text
    }
}
