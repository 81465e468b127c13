import FerryCore

/// A `Content-Type` value read once, as bytes: its media type (lowercased, without
/// parameters) and its `charset` parameter (unquoted). Foundation's trimming and splitting,
/// as this was read before, cost more than a small download's own delegate calls.
///
/// ```swift
/// let type = ContentType("Text/HTML; charset=\"UTF-8\"")
/// type.mediaType  // "text/html"
/// type.charset    // "UTF-8"
/// ```
public struct ContentType: Sendable, Hashable {
    /// Lowercased, without parameters; empty when the value names none.
    public let mediaType: String
    /// The `charset` parameter's value as sent, without quotes; nil when there is none.
    public let charset: String?

    public init(_ value: String) {
        let bytes = Array(value.utf8)
        var parts = bytes.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)[...]
        mediaType = Self.lowercased(Self.trimmed(parts.popFirst() ?? []))
        var charset: String?
        for parameter in parts {
            let field = Self.trimmed(parameter)
            guard let equals = field.firstIndex(of: UInt8(ascii: "=")),
                Self.lowercased(Self.trimmed(field[..<equals])) == "charset"
            else { continue }
            var value = Self.trimmed(field[(equals + 1)...])
            while value.first == UInt8(ascii: "\"") { value = value.dropFirst() }
            while value.last == UInt8(ascii: "\"") { value = value.dropLast() }
            charset = String(decoding: value, as: UTF8.self)
            break
        }
        self.charset = charset
    }

    /// Without the blanks around it (HTTP's optional white space: spaces and tabs).
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        Blanks.innerRange(of: bytes).map { bytes[$0] } ?? []
    }

    /// ASCII letters lowercased; anything else as Unicode says.
    private static func lowercased(_ bytes: ArraySlice<UInt8>) -> String {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return String(decoding: bytes, as: UTF8.self).lowercased() }
        return String(decoding: bytes.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
