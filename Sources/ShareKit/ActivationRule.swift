public import FerryApps
import Foundation

/// When a share extension is offered: Apple's `NSExtensionActivationRule`, read from the
/// extension's `attributes` in the app manifest, in either of its two forms: the dictionary
/// of the keys below, or a predicate string (``predicate``, an ``ActivationPredicate``, which
/// has the grammar; `TRUEPREDICATE` is one).
///
/// ```swift
/// let images = try ActivationRule.parse(.string("""
///     SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a,
///         ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image").@count >= 1).@count == 1
///     """))
/// images.accepts(ShareContent(attachments: [.png]))                          // true
///
/// let rule = try ActivationRule.parse(.object([
///     "NSExtensionActivationSupportsText": .bool(true),
///     "NSExtensionActivationSupportsImageWithMaxCount": .number(1),
/// ]))
/// rule.accepts(ShareContent(hasText: true, attachments: [.jpeg]))            // true
/// rule.evaluate(ShareContent(attachments: [.jpeg, .png])).reason             // "2 images, at most 1"
/// ```
///
/// The keys (each optional; a count is a whole number ≥ 0, and 0 is the same as leaving
/// the key out):
///
/// | key | value |
/// |---|---|
/// | `NSExtensionActivationSupportsText` | `true`: text alone may be shared |
/// | `NSExtensionActivationSupportsImageWithMaxCount` | attachments conforming to `public.image` |
/// | `NSExtensionActivationSupportsMovieWithMaxCount` | attachments conforming to `public.movie` |
/// | `NSExtensionActivationSupportsWebURLWithMaxCount` | `public.url` attachments that are not `public.file-url` |
/// | `NSExtensionActivationSupportsWebPageWithMaxCount` | attachments conforming to `public.html` |
/// | `NSExtensionActivationSupportsFileWithMaxCount` | any other attachment but a web URL |
/// | `NSExtensionActivationSupportsAttachmentsWithMaxCount` | any attachment; bounds the total |
///
/// ``evaluate(_:)`` documents how content is matched. A dictionary that supports nothing is
/// refused when parsed: its extension could never be offered. Predicates are read, not
/// solved: `FALSEPREDICATE` is accepted and refuses all content, saying so.
public struct ActivationRule: Sendable, Hashable, CustomStringConvertible {
    /// The dictionary keys, spelled as Apple spells them.
    public enum Key: String, CaseIterable, Sendable {
        case supportsText = "NSExtensionActivationSupportsText"
        case imageCount = "NSExtensionActivationSupportsImageWithMaxCount"
        case movieCount = "NSExtensionActivationSupportsMovieWithMaxCount"
        case fileCount = "NSExtensionActivationSupportsFileWithMaxCount"
        case webURLCount = "NSExtensionActivationSupportsWebURLWithMaxCount"
        case webPageCount = "NSExtensionActivationSupportsWebPageWithMaxCount"
        case attachmentCount = "NSExtensionActivationSupportsAttachmentsWithMaxCount"
    }

    /// The predicate string that accepts any content that is not empty.
    public static let truePredicateString = "TRUEPREDICATE"

    /// `TRUEPREDICATE`: offered for anything that is not empty.
    public static let truePredicate = ActivationRule(predicate: .truePredicate)

    /// The rule's predicate when it is written as a string; `nil` for the dictionary form.
    /// With a predicate, the dictionary's properties below are unused.
    public var predicate: ActivationPredicate?
    /// `NSExtensionActivationSupportsText`.
    public var supportsText: Bool
    /// The maxima of the `…WithMaxCount` keys; `nil` when the key is absent.
    public var maxImageCount: Int?
    public var maxMovieCount: Int?
    public var maxFileCount: Int?
    public var maxWebURLCount: Int?
    public var maxWebPageCount: Int?
    public var maxAttachmentCount: Int?

    /// A dictionary rule; nothing is supported unless said.
    public init(
        supportsText: Bool = false, maxImageCount: Int? = nil, maxMovieCount: Int? = nil, maxFileCount: Int? = nil,
        maxWebURLCount: Int? = nil, maxWebPageCount: Int? = nil, maxAttachmentCount: Int? = nil
    ) {
        self.predicate = nil
        self.supportsText = supportsText
        self.maxImageCount = maxImageCount
        self.maxMovieCount = maxMovieCount
        self.maxFileCount = maxFileCount
        self.maxWebURLCount = maxWebURLCount
        self.maxWebPageCount = maxWebPageCount
        self.maxAttachmentCount = maxAttachmentCount
    }

    /// A rule written as a predicate string.
    ///
    /// ```swift
    /// let rule = ActivationRule(predicate: try ActivationPredicate("extensionItems.@count == 1"))
    /// ```
    public init(predicate: ActivationPredicate) {
        self.init()
        self.predicate = predicate
    }

    /// Reads a rule as written in a manifest: a predicate string (``ActivationPredicate``)
    /// or an object of the keys above. `field` is the rule's path in the manifest, for errors
    /// (`extensions[0].attributes.NSExtensionActivationRule`).
    ///
    /// Throws ``AppManifestError`` naming the offending field in full for an unknown key, a
    /// wrong type, a count that is not a whole number ≥ 0, a dictionary that supports
    /// nothing, or a predicate that cannot be read (with the character and what was expected).
    public static func parse(_ value: JSONValue, field: String = "NSExtensionActivationRule") throws(AppManifestError) -> ActivationRule {
        let fields: [String: JSONValue]
        switch value {
        case .string(let text):
            do {
                return ActivationRule(predicate: try ActivationPredicate(text))
            } catch {
                throw AppManifestError(field: field, "cannot read the predicate: \(error)")
            }
        case .object(let object):
            fields = object
        default:
            throw AppManifestError(field: field, "expected a predicate string or an object of NSExtensionActivationSupports… keys, got \(literal(value))")
        }
        var rule = ActivationRule()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            let path = "\(field).\(name)"
            guard let key = Key(rawValue: name) else {
                let known = Key.allCases.map(\.rawValue).joined(separator: ", ")
                throw AppManifestError(field: path, "unknown key (known: \(known))")
            }
            if key == .supportsText {
                guard case .bool(let flag) = value else {
                    throw AppManifestError(field: path, "expected true or false, got \(literal(value))")
                }
                rule.supportsText = flag
                continue
            }
            guard let count = wholeNumber(value) else {
                throw AppManifestError(field: path, "expected a whole number ≥ 0, got \(literal(value))")
            }
            rule[count: key] = count
        }
        guard rule.supportsAnything else {
            throw AppManifestError(
                field: field, "the rule supports nothing, so the extension would never be offered: set a key to true or a count above 0, or use \"\(truePredicateString)\"")
        }
        return rule
    }

    /// The maximum for a `…WithMaxCount` key (`nil` for ``Key/supportsText``).
    public subscript(count key: Key) -> Int? {
        get {
            switch key {
            case .supportsText: nil
            case .imageCount: maxImageCount
            case .movieCount: maxMovieCount
            case .fileCount: maxFileCount
            case .webURLCount: maxWebURLCount
            case .webPageCount: maxWebPageCount
            case .attachmentCount: maxAttachmentCount
            }
        }
        set {
            switch key {
            case .supportsText: break
            case .imageCount: maxImageCount = newValue
            case .movieCount: maxMovieCount = newValue
            case .fileCount: maxFileCount = newValue
            case .webURLCount: maxWebURLCount = newValue
            case .webPageCount: maxWebPageCount = newValue
            case .attachmentCount: maxAttachmentCount = newValue
            }
        }
    }

    /// Whether any content at all can pass: for a predicate, whether it is other than
    /// `FALSEPREDICATE` alone (a predicate is not solved).
    public var supportsAnything: Bool {
        if let predicate { return !predicate.isFalsePredicate }
        return supportsText || Key.allCases.contains { (self[count: $0] ?? 0) > 0 }
    }

    /// The rule as a manifest writes it (the inverse of ``parse(_:field:)``).
    public var jsonValue: JSONValue {
        if let predicate { return .string(predicate.source) }
        var object: [String: JSONValue] = [:]
        if supportsText { object[Key.supportsText.rawValue] = .bool(true) }
        for key in Key.allCases {
            if let count = self[count: key] { object[key.rawValue] = .number(Double(count)) }
        }
        return .object(object)
    }

    /// A short line for listings: the predicate on one line (`TRUEPREDICATE`), or
    /// `text, images ≤ 1, files ≤ 5`.
    public var description: String {
        if let predicate { return predicate.description }
        var parts: [String] = supportsText ? ["text"] : []
        for key in Key.allCases {
            if let count = self[count: key], count > 0, let noun = key.noun { parts.append("\(noun.plural) ≤ \(count)") }
        }
        return parts.isEmpty ? "nothing" : parts.joined(separator: ", ")
    }

    /// `value` as a count: a whole number ≥ 0 (and small enough to be one), else `nil`.
    static func wholeNumber(_ value: JSONValue) -> Int? {
        guard case .number(let number) = value, number >= 0, number.rounded() == number, number < 1e15 else { return nil }
        return Int(number)
    }

    /// A JSON value as it would be written, for messages: `"two"`, `2.5`, `true`, `an object`.
    static func literal(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let number):
            number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
        case .string(let string):
            "\"" + string.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .array, .object: value.typeName
        }
    }
}

extension ActivationRule.Key {
    /// What the key counts, for messages; `nil` for ``supportsText``.
    var noun: (singular: String, plural: String)? {
        switch self {
        case .supportsText: nil
        case .imageCount: ("image", "images")
        case .movieCount: ("movie", "movies")
        case .fileCount: ("file", "files")
        case .webURLCount: ("web URL", "web URLs")
        case .webPageCount: ("web page", "web pages")
        case .attachmentCount: ("attachment", "attachments")
        }
    }
}
