/// Parameter types as the compiler compares them when it matches a method to a protocol
/// requirement, so that two spellings of one type compare equal.
///
/// Equal after normalizing: `(any Error)?`, `Swift.Error?` and `Optional<Error>`;
/// `@escaping @Sendable (URLRequest?) -> Void` and `(_ request: URLRequest?) -> ()` (the
/// compiler takes a witness without `@escaping` or `@Sendable`); `Foundation.URLSession` and
/// `URLSession`. Unequal, as for the compiler: `Error!` and `Error?`, `Int` and `Int64`.
/// A typealias is not seen through: its name is compared as written.
enum TypeSpelling {
    /// Modules whose name may qualify a type without changing it.
    static let modules: Set<String> = ["Swift", "Foundation", "FoundationNetworking", "FoundationEssentials", "Ferry"]
    /// Attributes and ownership words a witness may add or leave out.
    static let ignoredWords: Set<String> = ["@escaping", "@Sendable", "__owned", "__shared", "borrowing", "consuming", "any"]

    /// The type's canonical spelling: see the type's documentation.
    static func normalized(_ type: String) -> String {
        var tokens = tokenize(type).filter { !ignoredWords.contains($0) }
        tokens = removingModules(tokens)
        tokens = removingClosureParameterNames(tokens)
        tokens = spellingOptionals(tokens)
        tokens = removingRedundantParentheses(tokens)
        var text = ""
        for token in tokens {
            if let last = text.unicodeScalars.last, isWordScalar(last), let first = token.unicodeScalars.first, isWordScalar(first) {
                text += " "
            }
            text += token
        }
        return text
    }

    /// Identifiers (with a leading `@` for attributes), `->`, `...` and single punctuation.
    static func tokenize(_ text: String) -> [String] {
        var tokens: [String] = []
        var word = ""
        let scalars = Array(text.unicodeScalars)
        var index = 0
        func flush() {
            if !word.isEmpty { tokens.append(word) }
            word = ""
        }
        while index < scalars.count {
            let scalar = scalars[index]
            if isWordScalar(scalar) || (scalar == "@" && word.isEmpty) {
                word.unicodeScalars.append(scalar)
            } else {
                flush()
                if scalar == "-", index + 1 < scalars.count, scalars[index + 1] == ">" {
                    tokens.append("->")
                    index += 1
                } else if scalar == ".", index + 2 < scalars.count, scalars[index + 1] == ".", scalars[index + 2] == "." {
                    tokens.append("...")
                    index += 2
                } else if !scalar.properties.isWhitespace {
                    tokens.append(String(scalar))
                }
            }
            index += 1
        }
        flush()
        return tokens
    }

    private static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_"
    }

    /// `Foundation.URLSession` → `URLSession`; `URLSession.ResponseDisposition` is kept.
    private static func removingModules(_ tokens: [String]) -> [String] {
        removingRuns(of: tokens) { index, kept in
            modules.contains(tokens[index]) && index + 1 < tokens.count && tokens[index + 1] == "." && kept.last != "." ? 2 : 0
        }
    }

    /// `(_ request: URLRequest?) -> Void` → `(URLRequest?) -> Void`.
    private static func removingClosureParameterNames(_ tokens: [String]) -> [String] {
        removingRuns(of: tokens) { index, _ in
            tokens[index] == "_" && index + 2 < tokens.count && tokens[index + 2] == ":" ? 3 : 0
        }
    }

    /// `tokens` without the runs that `length` finds: given an index and the tokens kept so
    /// far, how many tokens from there to drop (0: keep this one).
    private static func removingRuns(of tokens: [String], _ length: (_ index: Int, _ kept: [String]) -> Int) -> [String] {
        var kept: [String] = []
        var index = 0
        while index < tokens.count {
            let run = length(index, kept)
            if run > 0 {
                index += run
            } else {
                kept.append(tokens[index])
                index += 1
            }
        }
        return kept
    }

    /// `Optional<X>` → `(X)?`, and `()` → `Void`.
    private static func spellingOptionals(_ tokens: [String]) -> [String] {
        var out: [String] = []
        var index = 0
        while index < tokens.count {
            if tokens[index] == "Optional", index + 1 < tokens.count, tokens[index + 1] == "<",
               let close = closing(tokens, from: index + 1, open: "<", close: ">") {
                out += ["("] + spellingOptionals(Array(tokens[index + 2..<close])) + [")", "?"]
                index = close + 1
            } else if tokens[index] == "(", index + 1 < tokens.count, tokens[index + 1] == ")" {
                out.append("Void")
                index += 2
            } else {
                out.append(tokens[index])
                index += 1
            }
        }
        return out
    }

    /// `(Error)?` → `Error?`: parentheses around one type that is not a function type, and
    /// that are not a function type's parameter list.
    private static func removingRedundantParentheses(_ tokens: [String]) -> [String] {
        var tokens = tokens
        var index = 0
        while index < tokens.count {
            guard tokens[index] == "(", let close = closing(tokens, from: index, open: "(", close: ")") else {
                index += 1
                continue
            }
            let inside = tokens[index + 1..<close]
            let parameterList = close + 1 < tokens.count && ["->", "async", "throws"].contains(tokens[close + 1])
            if !inside.isEmpty, !parameterList, !containsTopLevel(inside, [",", "->", ":"]) {
                tokens.remove(at: close)
                tokens.remove(at: index)
            } else {
                index += 1
            }
        }
        return tokens
    }

    /// The index of the token closing the bracket at `start`.
    private static func closing(_ tokens: [String], from start: Int, open: String, close: String) -> Int? {
        var depth = 0
        for index in start..<tokens.count {
            if tokens[index] == open { depth += 1 }
            if tokens[index] == close {
                depth -= 1
                if depth == 0 { return index }
            }
        }
        return nil
    }

    private static func containsTopLevel(_ tokens: ArraySlice<String>, _ separators: Set<String>) -> Bool {
        var depth = 0
        for token in tokens {
            if ["(", "[", "<"].contains(token) { depth += 1 }
            if [")", "]", ">"].contains(token) { depth -= 1 }
            if depth == 0, separators.contains(token) { return true }
        }
        return false
    }
}
