/// HTTP header fields in the order they were set, looked up without regard to case.
///
/// ```swift
/// var headers: HeaderFields = ["Accept": "application/json"]
/// headers["authorization"] = "Bearer …"
/// headers["Accept"]   // "application/json"
/// ```
///
/// In the protocol and the store they are a JSON array of pairs, `[["Accept","*/*"]]`, so
/// order and repeated names survive.
public struct HeaderFields: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, Codable {
    public struct Field: Sendable, Hashable, Codable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }

        public init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            name = try container.decode(String.self)
            value = try container.decode(String.self)
            guard container.isAtEnd else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "a header is a [name, value] pair")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(name)
            try container.encode(value)
        }
    }

    private var fields: [Field] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    public init<S: Sequence>(_ pairs: S) where S.Element == (String, String) {
        fields.reserveCapacity(pairs.underestimatedCount)
        for (name, value) in pairs { add(name: name, value: value) }
    }

    /// Makes room for `count` fields at once (a response's head is copied in one go).
    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    /// The first value for `name`; setting replaces every field of that name (nil removes them).
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            guard let newValue else {
                fields.removeAll { $0.name.caseInsensitiveEquals(name) }
                return
            }
            if let index = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) {
                fields[index].value = newValue
                var next = index + 1
                while next < fields.count {
                    if fields[next].name.caseInsensitiveEquals(name) { fields.remove(at: next) } else { next += 1 }
                }
            } else {
                fields.append(Field(name: name, value: newValue))
            }
        }
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    public init(from decoder: any Decoder) throws {
        fields = try [Field](from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try fields.encode(to: encoder)
    }

    public var count: Int { fields.count }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Fields of `other` replace fields of the same name here; the rest are kept.
    public func merging(_ other: HeaderFields) -> HeaderFields {
        var merged = self
        for name in Set(other.fields.map { $0.name.lowercased() }) { merged[name] = nil }
        for field in other.fields { merged.add(name: field.name, value: field.value) }
        return merged
    }
}

extension String {
    /// Field names are ASCII tokens (RFC 9110 §5.1): compared byte by byte, folding only
    /// A–Z, with no allocation (this runs for every header lookup of every response).
    func caseInsensitiveEquals(_ other: String) -> Bool {
        let a = self.utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
        }
    }
}
