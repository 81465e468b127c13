/// One `func` declaration as written: its name, parameters, effects and result, and where its
/// name is. Read from a ``SourceText`` without a Swift parser (see ``declarations(in:named:)``).
struct FunctionDeclaration: Equatable {
    /// One parameter: `label name: Type = default`.
    struct Parameter: Equatable {
        /// The argument label (`_` for none).
        var label: String
        /// The name inside the function.
        var name: String
        /// The type as written, whitespace collapsed, without a default value.
        var type: String
    }

    /// The base name: `urlSession`.
    var name: String
    var parameters: [Parameter]
    /// `async`, `throws`…, in the order written.
    var effects: [String]
    /// The result type as written, or nil for none (`Void`).
    var result: String?
    /// Where the name is: line and column from 1.
    var line: Int
    var column: Int

    /// `urlSession(_:task:didCompleteWithError:)`.
    var fullName: String {
        name + "(" + parameters.map { $0.label + ":" }.joined() + ")"
    }

    /// Every `func` declaration in `source` whose base name is in `names` (nil: every one):
    /// in a type, an extension, a protocol or at the top level, in every `#if` branch.
    /// Declarations may span lines and hold comments, attributes (`@escaping @Sendable`) and
    /// default values.
    static func declarations(in source: SourceText, named names: Set<String>?) -> [FunctionDeclaration] {
        var scanner = Scanner(source: source)
        var found: [FunctionDeclaration] = []
        while let keyword = source.nextWord("func", from: scanner.position) {
            scanner.position = keyword.upperBound
            if let declaration = scanner.declaration(named: names) { found.append(declaration) }
        }
        return found
    }
}

/// Reads declarations out of blanked source text, byte by byte.
private struct Scanner {
    let source: SourceText
    var position = 0
    private var bytes: [UInt8] { source.code }

    init(source: SourceText) { self.source = source }

    /// The declaration whose `func` keyword is just before the current position, when its
    /// name is in `names`.
    mutating func declaration(named names: Set<String>?) -> FunctionDeclaration? {
        skipSpace()
        let nameStart = position
        while position < bytes.count, isIdentifierByte(bytes[position]) { position += 1 }
        let name = source.text(nameStart..<position)
        guard !name.isEmpty, names?.contains(name) ?? true else { return nil }
        skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "<") {  // generic parameters
            guard let end = matching(from: position, open: "<", close: ">") else { return nil }
            position = end
            skipSpace()
        }
        guard position < bytes.count, bytes[position] == UInt8(ascii: "("),
              let end = matching(from: position, open: "(", close: ")") else { return nil }
        let parameters = Self.split(source.text(position + 1..<end - 1)).compactMap(Self.parameter)
        position = end
        let (effects, result) = signatureTail()
        let place = source.position(of: nameStart)
        return FunctionDeclaration(name: name, parameters: parameters, effects: effects, result: result,
                                   line: place.line, column: place.column)
    }

    /// `async throws -> Result` after the parameter clause, up to the body, a `where`
    /// clause or the end of the line.
    private mutating func signatureTail() -> (effects: [String], result: String?) {
        var effects: [String] = []
        while true {
            skipSpace()
            let start = position
            while position < bytes.count, isIdentifierByte(bytes[position]) { position += 1 }
            let word = source.text(start..<position)
            guard ["async", "throws", "rethrows", "reasync"].contains(word) else {
                position = start
                break
            }
            var effect = word
            if word == "throws", position < bytes.count, bytes[position] == UInt8(ascii: "("),
               let end = matching(from: position, open: "(", close: ")") {
                effect += source.text(position..<end).filter { !$0.isWhitespace }  // typed throws
                position = end
            }
            effects.append(effect)
        }
        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "-"), bytes[position + 1] == UInt8(ascii: ">") else {
            return (effects, nil)
        }
        position += 2
        let start = position
        let whereClause = Array(" where".utf8)
        var depth = 0
        while position < bytes.count {
            let byte = bytes[position]
            if "([<".utf8.contains(byte) { depth += 1 }
            if ")]".utf8.contains(byte) || (byte == UInt8(ascii: ">") && bytes[position - 1] != UInt8(ascii: "-")) { depth -= 1 }
            if depth <= 0, byte == UInt8(ascii: "{") || byte == UInt8(ascii: "\n") { break }
            if depth <= 0, bytes.has(whereClause, at: position) { break }
            position += 1
        }
        return (effects, Self.collapse(source.text(start..<position)))
    }

    /// The offset just past the bracket matching the one at `start`; `->` is no `>`.
    private func matching(from start: Int, open: Character, close: Character) -> Int? {
        let openByte = UInt8(ascii: open.unicodeScalars.first!)
        let closeByte = UInt8(ascii: close.unicodeScalars.first!)
        var depth = 0
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == openByte {
                depth += 1
            } else if byte == closeByte, !(closeByte == UInt8(ascii: ">") && index > 0 && bytes[index - 1] == UInt8(ascii: "-")) {
                depth -= 1
                if depth == 0 { return index + 1 }
            }
            index += 1
        }
        return nil
    }

    private mutating func skipSpace() {
        while position < bytes.count, [UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\t"), UInt8(ascii: "\r")].contains(bytes[position]) {
            position += 1
        }
    }

    /// A parameter clause's text split at its top-level commas.
    static func split(_ clause: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var depth = 0
        var previous: Character = " "
        for character in clause {
            switch character {
            case "(", "[", "<": depth += 1
            case ")", "]": depth -= 1
            case ">" where previous != "-": depth -= 1
            case "," where depth == 0:
                parts.append(current)
                current = ""
                previous = character
                continue
            default: break
            }
            current.append(character)
            previous = character
        }
        if !current.allSatisfy(\.isWhitespace) { parts.append(current) }
        return parts
    }

    /// `label name: Type = default` read into its parts; nil when it has no `:`.
    static func parameter(_ text: String) -> FunctionDeclaration.Parameter? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let names = text[..<colon].split(whereSeparator: \.isWhitespace).map(String.init)
        guard let label = names.first else { return nil }
        var type = String(text[text.index(after: colon)...])
        if let equals = topLevelEquals(in: type) { type = String(type[..<equals]) }
        return .init(label: label, name: names.count > 1 ? names[1] : label, type: collapse(type))
    }

    /// The first `=` outside brackets: where a default value starts.
    private static func topLevelEquals(in text: String) -> String.Index? {
        var depth = 0
        var previous: Character = " "
        for index in text.indices {
            switch text[index] {
            case "(", "[", "<": depth += 1
            case ")", "]": depth -= 1
            case ">" where previous != "-": depth -= 1
            case "=" where depth == 0: return index
            default: break
            }
            previous = text[index]
        }
        return nil
    }

    /// Runs of whitespace made one space, and none at the ends.
    static func collapse(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}

/// Letters, digits, `_` and every byte of a multi-byte UTF-8 character.
func isIdentifierByte(_ byte: UInt8) -> Bool {
    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_") || byte >= 0x80
}
