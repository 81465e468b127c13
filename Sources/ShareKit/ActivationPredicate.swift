/// An activation rule written as a predicate string, the form real extensions ship in their
/// Info.plist: a small, checked subset of `NSPredicate`'s format, read when the manifest is
/// and evaluated against ``ShareContent`` (one extension item: its text and attachments).
///
/// ```swift
/// let oneImage = try ActivationPredicate("""
///     SUBQUERY (extensionItems, $extensionItem, SUBQUERY ($extensionItem.attachments, $attachment,
///         ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image").@count == 1).@count == 1
///     """)
/// oneImage.evaluate(ShareContent(attachments: [.jpeg])).isAccepted          // true
/// oneImage.evaluate(ShareContent(attachments: [.jpeg, .png])).reason
/// // "0 of 1 extension items match, expected == 1: 2 of 2 attachments match, expected == 1"
/// ```
///
/// The grammar (keywords in any case; key paths as written):
///
/// ```
/// predicate  = and { ("OR" | "||") and }
/// and        = unary { ("AND" | "&&") unary }
/// unary      = ("NOT" | "!") unary | "(" predicate ")" | "TRUEPREDICATE" | "FALSEPREDICATE"
///            | ("ANY" | "SOME") $attachment ".registeredTypeIdentifiers" ("UTI-CONFORMS-TO" | "UTI-EQUALS") string
///            | $extensionItem ".attributedContentText" ("==" | "!=") ("nil" | "NULL")
///            | count operator count
/// count      = whole number | collection ".@count"
///            | "SUBQUERY" "(" collection "," $variable "," predicate ")" ".@count"
/// collection = "extensionItems" (outside a SUBQUERY) | $extensionItem ".attachments"
/// operator   = "==" | "=" | "!=" | "<>" | "<" | "<=" | "=<" | ">" | ">=" | "=>"
/// string     = "…" or '…', with \" \' \\ escapes
/// ```
///
/// A `$variable` is named by its SUBQUERY (any name: `$item`, `$a`) and is an extension item
/// or an attachment by the collection it runs over. An attachment's type identifiers are its
/// detected type; `UTI-CONFORMS-TO` follows ``TypeIdentifier/conforms(to:)``. Anything else
/// (other keywords, key paths or operators, `ALL`, arithmetic, more than
/// ``maximumLength`` characters or ``maximumDepth`` levels of nesting) is refused with a
/// ``SyntaxError`` naming the character where reading stopped and what was expected.
public struct ActivationPredicate: Sendable, Hashable, CustomStringConvertible {
    /// The longest predicate read, in characters.
    public static let maximumLength = 4096
    /// The deepest nesting of parentheses, `NOT` and `SUBQUERY` read.
    public static let maximumDepth = 32

    /// The predicate as written.
    public let source: String
    let root: Node

    /// Reads `source`; throws ``SyntaxError`` for anything outside the grammar above.
    ///
    /// ```swift
    /// let text = try ActivationPredicate(#"SUBQUERY(extensionItems, $e, $e.attributedContentText != nil).@count == 1"#)
    /// ```
    public init(_ source: String) throws(SyntaxError) {
        self.source = source
        self.root = try PredicateParser.parse(source)
    }

    init(source: String, root: Node) {
        self.source = source
        self.root = root
    }

    /// `TRUEPREDICATE`: every content that is not empty.
    public static let truePredicate = ActivationPredicate(source: "TRUEPREDICATE", root: .constant(true))

    /// Whether this is `FALSEPREDICATE` alone, which no content passes.
    public var isFalsePredicate: Bool { root == .constant(false) }

    /// The source on one line, runs of white space made one space.
    public var description: String {
        source.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// Two predicates are the same when they read the same, whatever their spacing.
    public static func == (lhs: ActivationPredicate, rhs: ActivationPredicate) -> Bool { lhs.root == rhs.root }
    public func hash(into hasher: inout Hasher) { hasher.combine(root) }

    /// Where a predicate cannot be read, and why.
    ///
    /// ```swift
    /// do { _ = try ActivationPredicate("TRUEPREDICATE AND") } catch {
    ///     print(error)   // at character 18: expected a predicate …, found the end
    /// }
    /// ```
    public struct SyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The character (from 1) where reading stopped.
        public var position: Int
        /// What was expected there and what was found.
        public var reason: String

        public var description: String { "at character \(position): \(reason)" }
    }
}

extension ActivationPredicate {
    /// The predicate, read.
    indirect enum Node: Sendable, Hashable {
        case constant(Bool)
        case not(Node)
        case and(Node, Node)
        case or(Node, Node)
        case compare(Count, Comparison, Count)
        /// `ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO / UTI-EQUALS "type"`.
        case type(variable: String, equals: Bool, TypeIdentifier)
        /// `$extensionItem.attributedContentText != nil` (`present` true) or `== nil`.
        case text(variable: String, present: Bool)
    }

    /// A whole number in a comparison.
    indirect enum Count: Sendable, Hashable {
        case literal(Int)
        case all(Collection)
        case subquery(Collection, variable: String, Node)
    }

    /// What a SUBQUERY or `@count` runs over.
    enum Collection: Sendable, Hashable {
        case extensionItems
        case attachments(of: String)
    }

    enum Comparison: String, Sendable, Hashable {
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="

        func holds(_ lhs: Int, _ rhs: Int) -> Bool {
            switch self {
            case .equal: lhs == rhs
            case .notEqual: lhs != rhs
            case .less: lhs < rhs
            case .lessOrEqual: lhs <= rhs
            case .greater: lhs > rhs
            case .greaterOrEqual: lhs >= rhs
            }
        }

        /// The same test with its sides exchanged: `1 < x` is `x > 1`.
        var flipped: Comparison {
            switch self {
            case .equal, .notEqual: self
            case .less: .greater
            case .lessOrEqual: .greaterOrEqual
            case .greater: .less
            case .greaterOrEqual: .lessOrEqual
            }
        }
    }
}
