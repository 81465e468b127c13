/// Spaces and tabs around text read as bytes: HTTP's optional white space around a header
/// value's parts, the blanks around a line of a URL list. Foundation's trimming costs more
/// than the text is worth where thousands of such values are read.
///
/// ```swift
/// let value = Array(" text/html ".utf8)
/// let inner = Blanks.innerRange(of: value).map { value[$0] }  // "text/html"
/// ```
public enum Blanks {
    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    /// The range of `bytes` from its first to its last byte that is not a blank; nil when
    /// every byte is one (or there are none).
    public static func innerRange<Bytes: BidirectionalCollection>(of bytes: Bytes) -> ClosedRange<Bytes.Index>? where Bytes.Element == UInt8 {
        guard let first = bytes.firstIndex(where: { !isBlank($0) }), let last = bytes.lastIndex(where: { !isBlank($0) }) else { return nil }
        return first...last
    }
}
