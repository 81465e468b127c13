/// A Swift file's bytes with comments and the insides of string literals blanked (every byte
/// but a newline becomes a space), so that a scan for declarations finds only code and a
/// byte's line and column stay those of the file.
///
/// Not a Swift parser: enough of the lexer to tell code from comments and strings, including
/// nested block comments, multi-line and raw strings, and interpolations holding strings.
struct SourceText {
    /// The blanked bytes: code as written, comments and string contents as spaces.
    let code: [UInt8]
    /// The offset of the first byte of each line.
    private let lineStarts: [Int]

    init(_ text: String) {
        let bytes = Array(text.utf8)
        code = Self.blank(bytes)
        var starts = [0]
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") { starts.append(index + 1) }
        lineStarts = starts
    }

    /// The line and column (both from 1; the column counts bytes, as the compiler's do).
    func position(of offset: Int) -> (line: Int, column: Int) {
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return (low + 1, offset - lineStarts[low] + 1)
    }

    /// The text of `range` in the blanked code.
    func text(_ range: Range<Int>) -> String {
        String(decoding: code[range], as: UTF8.self)
    }

    /// The next whole word `word` in the code from `start`: not part of a longer identifier,
    /// nor after a `.` or a backtick.
    func nextWord(_ word: String, from start: Int) -> Range<Int>? {
        let pattern = Array(word.utf8)
        var index = start
        while index + pattern.count <= code.count {
            defer { index += 1 }
            guard code.has(pattern, at: index) else { continue }
            let before = index == 0 ? UInt8(ascii: " ") : code[index - 1]
            let after = index + pattern.count < code.count ? code[index + pattern.count] : UInt8(ascii: " ")
            if !isIdentifierByte(before), before != UInt8(ascii: "."), before != UInt8(ascii: "`"), !isIdentifierByte(after) {
                return index..<index + pattern.count
            }
        }
        return nil
    }

    // MARK: Blanking

    /// What the lexer is inside of: code (at the top, or an interpolation's, which ends at
    /// its unmatched `)`) or a string literal.
    private enum Context {
        case code(parens: Int)
        /// `delimiter` ends it (`"`, `"""`, `"#`…); `escape` starts an escape (`\`, `\#`…).
        case string(delimiter: [UInt8], escape: [UInt8], multiline: Bool)
    }

    private static func blank(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        var stack: [Context] = [.code(parens: 0)]
        var index = 0
        let lineComment = Array("//".utf8), blockComment = Array("/*".utf8), tripleQuote = Array("\"\"\"".utf8)
        func clear(_ range: Range<Int>) {
            for position in range where out[position] != UInt8(ascii: "\n") { out[position] = UInt8(ascii: " ") }
        }
        while index < bytes.count {
            switch stack[stack.count - 1] {
            case .code(let parens):
                let byte = bytes[index]
                if bytes.has(lineComment, at: index) {
                    let end = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                    clear(index..<end)
                    index = end
                } else if bytes.has(blockComment, at: index) {
                    let end = endOfBlockComment(bytes, from: index)
                    clear(index..<end)
                    index = end
                } else if byte == UInt8(ascii: "#") || byte == UInt8(ascii: "\"") {
                    var hashes = 0
                    while index + hashes < bytes.count, bytes[index + hashes] == UInt8(ascii: "#") { hashes += 1 }
                    guard index + hashes < bytes.count, bytes[index + hashes] == UInt8(ascii: "\"") else {
                        index += max(hashes, 1)  // `#if`, `#selector`…: code
                        continue
                    }
                    let multiline = bytes.has(tripleQuote, at: index + hashes)
                    index += hashes + (multiline ? 3 : 1)
                    let hashText = String(repeating: "#", count: hashes)
                    stack.append(.string(delimiter: Array(((multiline ? "\"\"\"" : "\"") + hashText).utf8),
                                         escape: Array(("\\" + hashText).utf8), multiline: multiline))
                } else if byte == UInt8(ascii: "(") {
                    stack[stack.count - 1] = .code(parens: parens + 1)
                    index += 1
                } else if byte == UInt8(ascii: ")") {
                    if parens == 0, stack.count > 1 {
                        stack.removeLast()  // the end of an interpolation: back in its string
                    } else {
                        stack[stack.count - 1] = .code(parens: max(parens - 1, 0))
                    }
                    index += 1
                } else {
                    index += 1
                }
            case .string(let delimiter, let escape, let multiline):
                if bytes.has(delimiter, at: index) {
                    stack.removeLast()
                    index += delimiter.count
                } else if bytes.has(escape, at: index) {
                    let interpolation = index + escape.count < bytes.count && bytes[index + escape.count] == UInt8(ascii: "(")
                    clear(index..<min(index + escape.count + 1, bytes.count))
                    index += escape.count + 1
                    if interpolation { stack.append(.code(parens: 0)) }
                } else if !multiline, bytes[index] == UInt8(ascii: "\n") {
                    stack.removeLast()  // an unterminated string: the compiler's error, not ours
                    index += 1
                } else {
                    clear(index..<index + 1)
                    index += 1
                }
            }
        }
        return out
    }

    /// The offset just past the block comment starting at `start`; block comments nest.
    private static func endOfBlockComment(_ bytes: [UInt8], from start: Int) -> Int {
        var depth = 0
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "*") {
                depth += 1
                index += 2
            } else if bytes[index] == UInt8(ascii: "*"), bytes[index + 1] == UInt8(ascii: "/") {
                depth -= 1
                index += 2
                if depth == 0 { return index }
            } else {
                index += 1
            }
        }
        return bytes.count
    }
}

extension [UInt8] {
    /// Whether `pattern` is at `offset` (a plain loop: the generic `starts(with:)` made the
    /// unoptimized build that plugins run several times slower).
    func has(_ pattern: [UInt8], at offset: Int) -> Bool {
        guard offset >= 0, offset + pattern.count <= count else { return false }
        for index in pattern.indices where self[offset + index] != pattern[index] { return false }
        return true
    }
}
