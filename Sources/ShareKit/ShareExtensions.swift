public import FerryApps

/// What ShareKit requires of share extensions in an app manifest: their `attributes`.
///
/// ```swift
/// let manifest = try AppManifest.decode(from: data)
/// try ShareExtensions.validate(manifest)      // at install: refuses a bad rule, naming it
/// for item in manifest.extensions where item.point == ShareExtensions.point {
///     if try ShareExtensions.rule(for: item).accepts(content) { offer(item) }
/// }
/// ```
///
/// A share extension's `attributes` is an object with these keys, and no others:
///
/// | key | value |
/// |---|---|
/// | `NSExtensionActivationRule` | required: a predicate string (``ActivationPredicate``) or the dictionary of ``ActivationRule`` |
/// | `maxCharacters` | optional: a whole number ≥ 0, the compose sheet's text limit (no limit when absent) |
///
/// ```json
/// "attributes": {
///   "NSExtensionActivationRule": {
///     "NSExtensionActivationSupportsText": true,
///     "NSExtensionActivationSupportsImageWithMaxCount": 1
///   },
///   "maxCharacters": 25
/// }
/// ```
public enum ShareExtensions {
    /// The extension point of share extensions.
    public static let point = "share"

    /// The keys of ``ActivationRule`` in `attributes`.
    public static let activationRuleKey = "NSExtensionActivationRule"

    /// The compose sheet's text limit in `attributes`.
    public static let maxCharactersKey = "maxCharacters"

    /// The keys a share extension's `attributes` may have.
    public static let attributeKeys: Set<String> = [activationRuleKey, maxCharactersKey]

    /// Checks every share extension of `manifest`: `attributes` is an object of known keys
    /// with an activation rule that parses and, when present, a valid `maxCharacters`.
    /// Extensions of other points are left alone. Throws ``AppManifestError`` whose field is
    /// the full path (`extensions[0].attributes.NSExtensionActivationRule.…`).
    public static func validate(_ manifest: AppManifest) throws(AppManifestError) {
        for (index, item) in manifest.extensions.enumerated() where item.point == point {
            _ = try attributes(of: item, field: "extensions[\(index)].attributes")
        }
    }

    /// The activation rule of a share extension. Throws ``AppManifestError`` (fields start at
    /// `attributes`) when its attributes are missing or wrong.
    public static func rule(for item: ExtensionManifest) throws(AppManifestError) -> ActivationRule {
        try attributes(of: item, field: "attributes").rule
    }

    /// The compose sheet's text limit of a share extension; `nil` for no limit. Throws
    /// ``AppManifestError`` when its attributes are missing or wrong.
    public static func maxCharacters(for item: ExtensionManifest) throws(AppManifestError) -> Int? {
        try attributes(of: item, field: "attributes").maxCharacters
    }

    /// Reads and checks `attributes`, all of it, so that every accessor refuses what
    /// ``validate(_:)`` refuses.
    static func attributes(of item: ExtensionManifest, field: String) throws(AppManifestError) -> (rule: ActivationRule, maxCharacters: Int?) {
        guard let attributes = item.attributes else {
            throw AppManifestError(
                field: field, "a share extension needs attributes with \(activationRuleKey), e.g. {\"\(activationRuleKey)\": \"\(ActivationRule.truePredicateString)\"}")
        }
        guard case .object(let fields) = attributes else {
            throw AppManifestError(field: field, "expected an object, got \(ActivationRule.literal(attributes))")
        }
        if let unknown = fields.keys.sorted().first(where: { !attributeKeys.contains($0) }) {
            throw AppManifestError(field: "\(field).\(unknown)", "unknown attribute (known: \(attributeKeys.sorted().joined(separator: ", ")))")
        }
        guard let ruleValue = fields[activationRuleKey] else {
            throw AppManifestError(field: "\(field).\(activationRuleKey)", "missing: a share extension needs an activation rule, e.g. \"\(ActivationRule.truePredicateString)\"")
        }
        let rule = try ActivationRule.parse(ruleValue, field: "\(field).\(activationRuleKey)")
        var maxCharacters: Int?
        if let value = fields[maxCharactersKey] {
            guard let limit = ActivationRule.wholeNumber(value) else {
                throw AppManifestError(field: "\(field).\(maxCharactersKey)", "expected a whole number ≥ 0, got \(ActivationRule.literal(value))")
            }
            maxCharacters = limit
        }
        return (rule, maxCharacters)
    }
}
