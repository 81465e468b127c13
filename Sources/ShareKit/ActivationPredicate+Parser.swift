/// Reads the predicate subset of ``ActivationPredicate``: a tokenizer, then recursive descent
/// with the SUBQUERY variables in scope, so that a key path is checked where it is written.
struct PredicateParser {
    typealias Node = ActivationPredicate.Node
    typealias SyntaxError = ActivationPredicate.SyntaxError

    struct Token {
        enum Kind { case word, variable, string, number, symbol, end }
        var kind: Kind
        var text: String
        /// The character it starts at, from 1.
        var position: Int

        /// The token as messages name it: `AND`, `"public.image"`, `the end`.
        var shown: String {
            switch kind {
            case .end: "the end"
            case .string: "the string \"\(text)\""
            default: text
            }
        }

        func isKeyword(_ keyword: String) -> Bool { kind == .word && text.uppercased() == keyword }
        func isSymbol(_ symbols: String...) -> Bool { kind == .symbol && symbols.contains(text) }
    }

    /// A SUBQUERY variable: an extension item or an attachment.
    enum Element { case item, attachment }

    private var tokens: [Token]
    private var index = 0
    private var depth = 0
    private var scope: [(name: String, element: Element)] = []

    static func parse(_ source: String) throws(SyntaxError) -> Node {
        let length = source.count
        guard length <= ActivationPredicate.maximumLength else {
            throw SyntaxError(
                position: ActivationPredicate.maximumLength + 1,
                reason: "the predicate is \(length) characters long, at most \(ActivationPredicate.maximumLength)")
        }
        var parser = PredicateParser(tokens: try tokenize(source))
        let node = try parser.predicate()
        guard parser.current.kind == .end else {
            throw parser.expected("AND, OR or the end")
        }
        return node
    }

    private init(tokens: [Token]) { self.tokens = tokens }

    private var current: Token { tokens[index] }

    private mutating func advance() -> Token {
        defer { if index < tokens.count - 1 { index += 1 } }
        return current
    }

    private func expected(_ what: String) -> SyntaxError {
        SyntaxError(position: current.position, reason: "expected \(what), found \(current.shown)")
    }

    private mutating func expect(symbol: String) throws(SyntaxError) {
        guard current.isSymbol(symbol) else { throw expected("\"\(symbol)\"") }
        _ = advance()
    }

    private mutating func expect(word: String) throws(SyntaxError) {
        guard current.kind == .word, current.text == word else { throw expected(word) }
        _ = advance()
    }

    /// Reads one level deeper, opened by the token at `position`; refuses the level past
    /// ``ActivationPredicate/maximumDepth`` there.
    private mutating func nested<T>(at position: Int, _ read: (inout PredicateParser) throws(SyntaxError) -> T) throws(SyntaxError) -> T {
        guard depth < ActivationPredicate.maximumDepth else {
            throw SyntaxError(position: position, reason: "nested more than \(ActivationPredicate.maximumDepth) levels deep")
        }
        depth += 1
        defer { depth -= 1 }
        return try read(&self)
    }

    // MARK: Predicates

    private mutating func predicate() throws(SyntaxError) -> Node {
        try chain(keyword: "OR", symbol: "||", Node.or) { (parser: inout PredicateParser) throws(SyntaxError) in try parser.conjunction() }
    }

    private mutating func conjunction() throws(SyntaxError) -> Node {
        try chain(keyword: "AND", symbol: "&&", Node.and) { (parser: inout PredicateParser) throws(SyntaxError) in try parser.unary() }
    }

    /// `operand { (keyword | symbol) operand }`, joined from the left by `join`.
    private mutating func chain(
        keyword: String, symbol: String, _ join: (Node, Node) -> Node,
        _ operand: (inout PredicateParser) throws(SyntaxError) -> Node
    ) throws(SyntaxError) -> Node {
        var node = try operand(&self)
        while current.isKeyword(keyword) || current.isSymbol(symbol) {
            _ = advance()
            node = join(node, try operand(&self))
        }
        return node
    }

    private mutating func unary() throws(SyntaxError) -> Node {
        if current.isKeyword("NOT") || current.isSymbol("!") {
            let opener = advance()
            return try nested(at: opener.position) { (parser: inout PredicateParser) throws(SyntaxError) in .not(try parser.unary()) }
        }
        if current.isSymbol("(") {
            let opener = advance()
            let node = try nested(at: opener.position) { (parser: inout PredicateParser) throws(SyntaxError) in try parser.predicate() }
            try expect(symbol: ")")
            return node
        }
        if current.isKeyword("TRUEPREDICATE") || current.isKeyword("FALSEPREDICATE") {
            return .constant(advance().isKeyword("TRUEPREDICATE"))
        }
        if current.isKeyword("ANY") || current.isKeyword("SOME") {
            _ = advance()
            return try typeTest()
        }
        return try comparison()
    }

    /// After `ANY`: `$attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "type"`.
    private mutating func typeTest() throws(SyntaxError) -> Node {
        let variable = try variable(of: .attachment, then: "registeredTypeIdentifiers")
        let equals: Bool
        if current.isKeyword("UTI-CONFORMS-TO") {
            equals = false
        } else if current.isKeyword("UTI-EQUALS") {
            equals = true
        } else {
            throw expected("UTI-CONFORMS-TO or UTI-EQUALS")
        }
        _ = advance()
        guard current.kind == .string else { throw expected("a type identifier in quotes") }
        let type = advance().text
        guard !type.isEmpty, !type.contains(where: \.isWhitespace) else {
            throw SyntaxError(position: tokens[index - 1].position, reason: "\"\(type)\" is not a type identifier")
        }
        return .type(variable: variable, equals: equals, TypeIdentifier(type))
    }

    /// `count operator count`, or the text test `$item.attributedContentText != nil`.
    private mutating func comparison() throws(SyntaxError) -> Node {
        if current.kind == .variable, element(current.text) == .item, peekKey() == "attributedContentText" {
            let variable = advance().text
            _ = advance(); _ = advance()  // . attributedContentText
            guard current.isSymbol("==", "=", "!=", "<>") else { throw expected("== nil or != nil") }
            let present = advance().isSymbol("!=", "<>")
            guard current.isKeyword("NIL") || current.isKeyword("NULL") else { throw expected("nil") }
            _ = advance()
            return .text(variable: variable, present: present)
        }
        if current.kind == .variable, element(current.text) == .attachment, peekKey() == "registeredTypeIdentifiers" {
            throw expected("ANY before \(current.text).registeredTypeIdentifiers")
        }
        let lhs = try count(expecting: Self.predicateStart)
        let comparison: ActivationPredicate.Comparison
        switch current.kind == .symbol ? current.text : "" {
        case "==", "=": comparison = .equal
        case "!=", "<>": comparison = .notEqual
        case "<": comparison = .less
        case "<=", "=<": comparison = .lessOrEqual
        case ">": comparison = .greater
        case ">=", "=>": comparison = .greaterOrEqual
        default: throw expected("a comparison (==, !=, <, <=, >, >=)")
        }
        _ = advance()
        return .compare(lhs, comparison, try count(expecting: "a count (a number, SUBQUERY(…).@count or ….@count)"))
    }

    private static let predicateStart =
        "a predicate (TRUEPREDICATE, FALSEPREDICATE, NOT, \"(\", ANY, SUBQUERY, extensionItems, a $variable or a number)"

    private mutating func count(expecting what: String) throws(SyntaxError) -> ActivationPredicate.Count {
        if current.kind == .number {
            guard let value = Int(current.text), current.text.count <= 9 else {
                throw SyntaxError(position: current.position, reason: "\(current.text) is too large a count")
            }
            _ = advance()
            return .literal(value)
        }
        if current.isKeyword("SUBQUERY") {
            let opener = advance()
            return try nested(at: opener.position) { (parser: inout PredicateParser) throws(SyntaxError) in try parser.subquery() }
        }
        if current.kind == .word && current.text == "extensionItems" || current.kind == .variable {
            let collection = try collection()
            try countSuffix()
            return .all(collection)
        }
        throw expected(what)
    }

    /// After `SUBQUERY`: `(collection, $variable, predicate).@count`.
    private mutating func subquery() throws(SyntaxError) -> ActivationPredicate.Count {
        try expect(symbol: "(")
        let collection = try collection()
        try expect(symbol: ",")
        guard current.kind == .variable else { throw expected("a $variable naming each element") }
        let name = current.text
        guard element(name) == nil else {
            throw SyntaxError(position: current.position, reason: "\(name) is already in use by an enclosing SUBQUERY")
        }
        _ = advance()
        try expect(symbol: ",")
        if case .extensionItems = collection { scope.append((name, .item)) } else { scope.append((name, .attachment)) }
        defer { scope.removeLast() }
        let node = try predicate()
        try expect(symbol: ")")
        try countSuffix()
        return .subquery(collection, variable: name, node)
    }

    /// `extensionItems` (outside a SUBQUERY) or `$item.attachments`.
    private mutating func collection() throws(SyntaxError) -> ActivationPredicate.Collection {
        if current.kind == .word, current.text == "extensionItems" {
            guard scope.isEmpty else {
                throw SyntaxError(position: current.position, reason: "extensionItems is read outside a SUBQUERY only; inside, use its variable")
            }
            _ = advance()
            return .extensionItems
        }
        return .attachments(of: try variable(of: .item, then: "attachments"))
    }

    private mutating func countSuffix() throws(SyntaxError) {
        try expect(symbol: ".")
        try expect(word: "@count")
    }

    /// `$name.key` where `$name` is in scope as `element`; returns the name.
    private mutating func variable(of element: Element, then key: String) throws(SyntaxError) -> String {
        func noun(_ element: Element) -> String { element == .item ? "an extension item" : "an attachment" }
        guard current.kind == .variable else { throw expected("a $variable for \(noun(element))") }
        let token = current
        guard let found = self.element(token.text) else {
            let known = scope.map(\.name)
            throw SyntaxError(
                position: token.position,
                reason: "\(token.text) is not a SUBQUERY variable here" + (known.isEmpty ? "" : " (in scope: \(known.joined(separator: ", ")))"))
        }
        guard found == element else {
            throw SyntaxError(position: token.position, reason: "\(token.text) is \(noun(found)), expected \(noun(element))")
        }
        _ = advance()
        try expect(symbol: ".")
        guard current.kind == .word, current.text == key else {
            let keys = element == .item ? "attachments or attributedContentText" : "registeredTypeIdentifiers"
            throw expected("\(keys) after \(token.text).")
        }
        _ = advance()
        return token.text
    }

    private func element(_ name: String) -> Element? { scope.last { $0.name == name }?.element }

    /// The key after the current token's `.`, if that is what follows.
    private func peekKey() -> String? {
        guard index + 2 < tokens.count, tokens[index + 1].isSymbol("."), tokens[index + 2].kind == .word else { return nil }
        return tokens[index + 2].text
    }
}

extension PredicateParser {
    /// Words (`AND`, `extensionItems`, `@count`, `UTI-CONFORMS-TO`), `$variables`, quoted
    /// strings, whole numbers and operators; an `.end` token last.
    static func tokenize(_ source: String) throws(SyntaxError) -> [Token] {
        let characters = Array(source)
        var tokens: [Token] = []
        var at = 0
        func isWordCharacter(_ character: Character) -> Bool {
            character.isASCII && (character.isLetter || character.isNumber || character == "_")
        }
        while at < characters.count {
            let character = characters[at]
            let start = at
            if character.isWhitespace {
                at += 1
                continue
            }
            if character.isASCII && character.isNumber {
                while at < characters.count, characters[at].isASCII, characters[at].isNumber { at += 1 }
                tokens.append(Token(kind: .number, text: String(characters[start..<at]), position: start + 1))
            } else if isWordCharacter(character) || character == "@" || character == "$" {
                at += 1
                while at < characters.count, isWordCharacter(characters[at]) { at += 1 }
                // UTI-CONFORMS-TO and UTI-EQUALS are single keywords, hyphens and all.
                if String(characters[start..<at]).uppercased() == "UTI" {
                    while at < characters.count, isWordCharacter(characters[at]) || characters[at] == "-" { at += 1 }
                }
                let text = String(characters[start..<at])
                guard text.count > 1 || (character != "@" && character != "$") else {
                    throw SyntaxError(position: start + 1, reason: "expected a name after \(character)")
                }
                tokens.append(Token(kind: character == "$" ? .variable : .word, text: text, position: start + 1))
            } else if character == "\"" || character == "'" {
                at += 1
                var text = ""
                while true {
                    guard at < characters.count else {
                        throw SyntaxError(position: characters.count + 1, reason: "expected the closing \(character) of the string at character \(start + 1), found the end")
                    }
                    let next = characters[at]
                    at += 1
                    if next == character { break }
                    if next == "\\", at < characters.count {
                        text.append(characters[at])
                        at += 1
                    } else {
                        text.append(next)
                    }
                }
                tokens.append(Token(kind: .string, text: text, position: start + 1))
            } else {
                let pair = at + 1 < characters.count ? String(characters[at...at + 1]) : ""
                let symbol: String
                if ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"].contains(pair) {
                    symbol = pair
                } else if "=<>!(),.".contains(character) {
                    symbol = String(character)
                } else {
                    throw SyntaxError(position: start + 1, reason: "unexpected character \"\(character)\"")
                }
                at += symbol.count
                tokens.append(Token(kind: .symbol, text: symbol, position: start + 1))
            }
        }
        tokens.append(Token(kind: .end, text: "", position: characters.count + 1))
        return tokens
    }
}
