// Every enum of the protocol is written as one JSON object: a "type" key naming the case,
// and the case's fields beside it, e.g. {"type":"hello","protocolVersion":1,...}.
// Unknown fields are ignored (Codable does); an unknown "type" throws UnknownType, which
// MessageCoder turns into FerryProtocolError.unknownMessageType.

/// Thrown while decoding when a `type` names no case this build knows.
struct UnknownType: Error {
    var family: String
    var name: String
}

struct TaggedKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }

    static let type = TaggedKey("type")
}

/// A case name of a tagged enum.
protocol TypeTag: RawRepresentable<String>, CaseIterable {
    /// How a person would name this family in an error: "message", "request", "reply"…
    static var family: String { get }
}

extension Decoder {
    /// Reads the `type` key and returns the tag it names.
    func tag<Tag: TypeTag>(_: Tag.Type) throws -> Tag {
        let container = try container(keyedBy: TaggedKey.self)
        let name = try container.decode(String.self, forKey: .type)
        guard let tag = Tag(rawValue: name) else { throw UnknownType(family: Tag.family, name: name) }
        return tag
    }

    /// Decodes a field beside the `type` key.
    func field<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        try container(keyedBy: TaggedKey.self).decode(T.self, forKey: TaggedKey(name))
    }
}

extension Encoder {
    /// Writes the `type` key, then whatever the payload's own `encode(to:)` writes beside it.
    func encode<Tag: TypeTag>(tag: Tag, payload: (any Encodable)? = nil) throws {
        var container = container(keyedBy: TaggedKey.self)
        try container.encode(tag.rawValue, forKey: .type)
        try payload?.encode(to: self)
    }

    /// Writes the `type` key and named fields.
    func encode<Tag: TypeTag>(tag: Tag, fields: KeyValuePairs<String, any Encodable>) throws {
        var container = container(keyedBy: TaggedKey.self)
        try container.encode(tag.rawValue, forKey: .type)
        for (name, value) in fields {
            try container.encode(value, forKey: TaggedKey(name))
        }
    }
}
