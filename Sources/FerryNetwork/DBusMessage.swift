/// One D-Bus message: a fixed header, header fields (path, interface, member…) and a body of
/// values. ferryd sends method calls and error replies and reads anything.
struct DBusMessage: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        case methodCall = 1, methodReturn = 2, error = 3, signal = 4
    }

    /// The header's flags: no reply is wanted (`NO_REPLY_EXPECTED`).
    static let noReplyExpected: UInt8 = 0x1

    var kind: Kind
    var flags: UInt8 = 0
    /// Set by the connection when sent.
    var serial: UInt32 = 0
    var path: String?
    var interface: String?
    var member: String?
    var errorName: String?
    var replySerial: UInt32?
    var destination: String?
    var sender: String?
    var body: [DBusValue] = []

    /// A call of `interface.member` on `path` of `destination` with `body`.
    static func call(
        _ destination: String, path: String, interface: String, member: String, _ body: [DBusValue] = []
    ) -> DBusMessage {
        DBusMessage(kind: .methodCall, path: path, interface: interface, member: member, destination: destination, body: body)
    }

    /// A call of the bus itself (`org.freedesktop.DBus`).
    static func busCall(_ member: String, _ body: [DBusValue] = []) -> DBusMessage {
        call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: member, body)
    }

    /// The body's signature.
    var signature: String { body.map(\.type.signature).joined() }

    /// The message on the wire, little-endian, with `serial`.
    func encoded(serial: UInt32) throws(DBusError) -> [UInt8] {
        var fields: [DBusValue] = []
        func field(_ code: UInt8, _ value: DBusValue?) {
            if let value { fields.append(.structure([.byte(code), .variant(value)])) }
        }
        field(1, path.map(DBusValue.objectPath))
        field(2, interface.map(DBusValue.string))
        field(3, member.map(DBusValue.string))
        field(4, errorName.map(DBusValue.string))
        field(5, replySerial.map(DBusValue.uint32))
        field(6, destination.map(DBusValue.string))
        field(7, sender.map(DBusValue.string))
        if !body.isEmpty { field(8, .signature(signature)) }
        var writer = DBusWriter()
        writer.append(UInt8(ascii: "l"))
        writer.append(kind.rawValue)
        writer.append(flags)
        writer.append(UInt8(1))
        writer.append(UInt32(0))  // body length, set below
        writer.append(serial)
        try writer.write(.array(.structure([.byte, .variant]), fields))
        writer.align(8)
        let bodyStart = writer.bytes.count
        for value in body { try writer.write(value) }
        var bytes = writer.bytes
        withUnsafeBytes(of: UInt32(bytes.count - bodyStart).littleEndian) { bytes.replaceSubrange(4..<8, with: $0) }
        return bytes
    }

    /// The whole length of the message whose first 16 bytes are `prefix`: read before the rest
    /// arrives, so that one too long is refused before it is buffered.
    static func length(prefix: ArraySlice<UInt8>) throws(DBusError) -> Int {
        precondition(prefix.count >= 16, "a message's length needs its first 16 bytes")
        let bytes = Array(prefix.prefix(16))
        guard bytes[0] == UInt8(ascii: "l") || bytes[0] == UInt8(ascii: "B") else {
            throw .protocolViolation("a message of byte order \(bytes[0])")
        }
        guard bytes[3] == 1 else { throw .protocolViolation("a message of protocol version \(bytes[3])") }
        var reader = DBusReader(bytes, bigEndian: bytes[0] == UInt8(ascii: "B"), offset: 4)
        let bodyLength = Int(try reader.integer(UInt32.self))
        _ = try reader.integer(UInt32.self)
        let fieldsLength = Int(try reader.integer(UInt32.self))
        return (16 + fieldsLength + 7) / 8 * 8 + bodyLength
    }

    /// Reads one whole message (`bytes` is exactly its length).
    static func decode(_ bytes: [UInt8]) throws(DBusError) -> DBusMessage {
        guard bytes.count >= 16, try length(prefix: bytes[...]) == bytes.count else {
            throw .protocolViolation("a message whose length does not match its header")
        }
        guard let kind = Kind(rawValue: bytes[1]) else { throw .protocolViolation("a message of type \(bytes[1])") }
        var reader = DBusReader(bytes, bigEndian: bytes[0] == UInt8(ascii: "B"), offset: 4)
        let bodyLength = Int(try reader.integer(UInt32.self))
        var message = DBusMessage(kind: kind, flags: bytes[2], serial: try reader.integer(UInt32.self))
        guard message.serial != 0 else { throw .protocolViolation("a message of serial 0") }
        var signature = ""
        guard case .array(_, let fields) = try reader.read(.array(.structure([.byte, .variant]))) else {
            throw .protocolViolation("header fields")
        }
        for case .structure(let pair) in fields {
            guard case .byte(let code) = pair[0], case .variant(let value) = pair[1] else { continue }
            switch (code, value) {
            case (1, .objectPath(let text)): message.path = text
            case (2, .string(let text)): message.interface = text
            case (3, .string(let text)): message.member = text
            case (4, .string(let text)): message.errorName = text
            case (5, .uint32(let number)): message.replySerial = number
            case (6, .string(let text)): message.destination = text
            case (7, .string(let text)): message.sender = text
            case (8, .signature(let text)): signature = text
            case (1...9, _): throw .protocolViolation("header field \(code) of type \(value.type.signature)")
            default: break  // unknown fields are to be ignored
            }
        }
        let complete = switch kind {
        case .methodCall: message.path != nil && message.member != nil
        case .methodReturn: message.replySerial != nil
        case .error: message.replySerial != nil && message.errorName != nil
        case .signal: message.path != nil && message.interface != nil && message.member != nil
        }
        guard complete else { throw .protocolViolation("a \(kind) message without the header fields it needs") }
        try reader.align(8)
        guard bytes.count - reader.offset == bodyLength else { throw .protocolViolation("a body of the wrong length") }
        for type in try DBusType.parse(signature) { message.body.append(try reader.read(type)) }
        guard reader.isAtEnd else { throw .protocolViolation("a body longer than its signature '\(signature)'") }
        return message
    }

    /// The error an error reply stands for (its name and first string).
    var remoteError: DBusError {
        .remote(name: errorName ?? "org.freedesktop.DBus.Error.Failed", message: body.first?.string ?? "")
    }
}
