import FerryApps
import Foundation
import ShareKit
import Testing

/// Manifests as JSON text, decoded by FerryApps as `ferry apps install` would.
enum Manifests {
    /// ShareAlike with one share extension whose `attributes` is `attributes` (JSON text;
    /// `nil` leaves the key out), and a second, valid one.
    static func shareAlike(attributes: String?) -> String {
        let first = attributes.map { #", "attributes": \#($0)"# } ?? ""
        return #"""
            {
              "bundleIdentifier": "com.example.sharealike",
              "name": "ShareAlike",
              "executables": ["/opt/sharealike/bin/sharealike"],
              "launch": ["/opt/sharealike/bin/sharealike", "--session", "{session}"],
              "appGroups": ["group.com.example.sharealike"],
              "extensions": [
                {"bundleIdentifier": "com.example.sharealike.share", "name": "ShareAlike",
                 "executables": ["/opt/sharealike/bin/sharealike-share"], "point": "share",
                 "backgroundSessionIdentifier": "com.example.sharealike.bg"\#(first)},
                {"bundleIdentifier": "com.example.sharealike.files", "name": "ShareAlike Files",
                 "executables": ["/opt/sharealike/bin/sharealike-files"], "point": "share",
                 "attributes": {"NSExtensionActivationRule": "TRUEPREDICATE"}}
              ]
            }
            """#
    }

    static func decode(_ text: String) throws -> AppManifest { try AppManifest.decode(from: Data(text.utf8)) }
}

@Suite("Share extensions in app manifests")
struct ShareExtensionsTests {
    @Test("A valid manifest: rules and the character limit")
    func valid() throws {
        let manifest = try Manifests.decode(Manifests.shareAlike(attributes: #"""
            {"NSExtensionActivationRule": {"NSExtensionActivationSupportsText": true,
                                           "NSExtensionActivationSupportsImageWithMaxCount": 1},
             "maxCharacters": 25}
            """#))
        try ShareExtensions.validate(manifest)
        let share = manifest.extensions[0]
        #expect(try ShareExtensions.rule(for: share) == ActivationRule(supportsText: true, maxImageCount: 1))
        #expect(try ShareExtensions.maxCharacters(for: share) == 25)
        #expect(try ShareExtensions.rule(for: manifest.extensions[1]) == .truePredicate)
        #expect(try ShareExtensions.maxCharacters(for: manifest.extensions[1]) == nil)
    }

    @Test("A predicate string rule, as Info.plist has it, read from the manifest and matched")
    func predicateRule() throws {
        let rule = #"SUBQUERY (extensionItems, $extensionItem, SUBQUERY ($extensionItem.attachments, $attachment, ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO \"public.image\").@count == 1).@count == 1"#
        let manifest = try Manifests.decode(Manifests.shareAlike(attributes: #"{"NSExtensionActivationRule": "\#(rule)", "maxCharacters": 25}"#))
        try ShareExtensions.validate(manifest)
        let read = try ShareExtensions.rule(for: manifest.extensions[0])
        #expect(read.predicate == (try ActivationPredicate(rule.replacingOccurrences(of: "\\\"", with: "\""))))
        #expect(read.accepts(ShareContent(hasText: true, attachments: [.jpeg])))
        #expect(read.evaluate(ShareContent(attachments: [.jpeg, .png])).reason
                == "0 of 1 extension items match, expected == 1: 2 of 2 attachments match, expected == 1")
        #expect(try ShareExtensions.maxCharacters(for: manifest.extensions[0]) == 25)

        let broken = try Manifests.decode(Manifests.shareAlike(attributes: #"{"NSExtensionActivationRule": "SUBQUERY(extensionItems, $e, $e.attachments.@count <= 3"}"#))
        let error = try #require(throws: AppManifestError.self) { try ShareExtensions.validate(broken) }
        #expect(error.description == #"extensions[0].attributes.NSExtensionActivationRule: cannot read the predicate: at character 56: expected ")", found the end"#)
    }

    /// (attributes as JSON text or nil, the field of the error, its reason)
    static let errors: [(String?, String, String)] = [
        (nil, "extensions[0].attributes",
         #"a share extension needs attributes with NSExtensionActivationRule, e.g. {"NSExtensionActivationRule": "TRUEPREDICATE"}"#),
        (#""TRUEPREDICATE""#, "extensions[0].attributes", #"expected an object, got "TRUEPREDICATE""#),
        (#"{"NSExtensionActivationRules": "TRUEPREDICATE"}"#, "extensions[0].attributes.NSExtensionActivationRules",
         "unknown attribute (known: NSExtensionActivationRule, maxCharacters)"),
        (#"{"maxCharacters": 25}"#, "extensions[0].attributes.NSExtensionActivationRule",
         #"missing: a share extension needs an activation rule, e.g. "TRUEPREDICATE""#),
        (#"{"NSExtensionActivationRule": "TRUEPREDICATE", "maxCharacters": "25"}"#, "extensions[0].attributes.maxCharacters",
         #"expected a whole number ≥ 0, got "25""#),
    ]

    @Test("Bad attributes are refused, naming the field", arguments: errors)
    func refused(_ attributes: String?, _ field: String, _ reason: String) throws {
        let manifest = try Manifests.decode(Manifests.shareAlike(attributes: attributes))
        let error = try #require(throws: AppManifestError.self) { try ShareExtensions.validate(manifest) }
        #expect(error.field == field)
        #expect(error.reason == reason)
        // The accessors refuse the same, with the path from `attributes`.
        let ruleError = try #require(throws: AppManifestError.self) { try ShareExtensions.rule(for: manifest.extensions[0]) }
        #expect(ruleError.field == String(field.dropFirst("extensions[0].".count)))
        #expect(ruleError.reason == reason)
    }

    @Test("The second extension's error names index 1")
    func index() throws {
        var manifest = try Manifests.decode(Manifests.shareAlike(attributes: #"{"NSExtensionActivationRule": "TRUEPREDICATE"}"#))
        manifest.extensions[1].attributes = .object(["NSExtensionActivationRule": .object(["NSExtensionActivationSupportsText": .number(1)])])
        let error = try #require(throws: AppManifestError.self) { try ShareExtensions.validate(manifest) }
        #expect(error.description == "extensions[1].attributes.NSExtensionActivationRule.NSExtensionActivationSupportsText: expected true or false, got 1")
    }
}
