import FerryApps
import Foundation
import ShareKit
import Testing

/// The contents of the matrix, each made of real files whose types libmagic detects.
struct MatrixContents {
    let textOnly, oneImage, twoImages, movie, url, imageAndText, imageAndMovie: ShareContent

    init(in scratch: Scratch) async throws {
        let jpeg = try await TypeIdentifier.detect(fileAt: scratch.convert("-size", "40x30", "xc:red", "cow.jpg"))
        let png = try await TypeIdentifier.detect(fileAt: scratch.convert("-size", "30x40", "xc:blue", "sky.png"))
        let mp4 = try TypeIdentifier.detect(fileAt: scratch.write(Samples.isoMedia(brand: "mp42"), to: "clip.mp4"))
        try #require([jpeg, png, mp4] == [.jpeg, .png, .mpeg4Movie])
        textOnly = ShareContent(hasText: true)
        oneImage = ShareContent(attachments: [jpeg])
        twoImages = ShareContent(attachments: [jpeg, png])
        movie = ShareContent(attachments: [mp4])
        url = ShareContent(attachments: [.url])
        imageAndText = ShareContent(hasText: true, attachments: [jpeg])
        imageAndMovie = ShareContent(attachments: [jpeg, mp4])
    }

    var all: [(String, ShareContent)] {
        [("text only", textOnly), ("one image", oneImage), ("two images", twoImages), ("a movie", movie),
         ("a URL", url), ("image + text", imageAndText), ("image + movie", imageAndMovie)]
    }
}

@Suite("Activation rules: parsing and the matrix")
struct ActivationRuleTests {
    /// Each rule, as a manifest writes it, with its verdict for each content of
    /// ``MatrixContents/all`` in order: `nil` for accepted, else the reason.
    static let rules: [(String, JSONValue, [String?])] = [
        ("text only", .object(["NSExtensionActivationSupportsText": .bool(true)]), [
            nil, "images are not supported (public.jpeg)", "images are not supported (public.jpeg)",
            "movies are not supported (public.mpeg-4)", "web URLs are not supported (public.url)",
            "images are not supported (public.jpeg)", "images are not supported (public.jpeg)",
        ]),
        ("one image", .object(["NSExtensionActivationSupportsImageWithMaxCount": .number(1)]), [
            "text alone is not supported", nil, "2 images, at most 1", "movies are not supported (public.mpeg-4)",
            "web URLs are not supported (public.url)", nil, "movies are not supported (public.mpeg-4)",
        ]),
        ("images ≤ 2", .object(["NSExtensionActivationSupportsImageWithMaxCount": .number(2)]), [
            "text alone is not supported", nil, nil, "movies are not supported (public.mpeg-4)",
            "web URLs are not supported (public.url)", nil, "movies are not supported (public.mpeg-4)",
        ]),
        ("movie", .object(["NSExtensionActivationSupportsMovieWithMaxCount": .number(1)]), [
            "text alone is not supported", "images are not supported (public.jpeg)", "images are not supported (public.jpeg)",
            nil, "web URLs are not supported (public.url)", "images are not supported (public.jpeg)",
            "images are not supported (public.jpeg)",
        ]),
        ("web URL", .object(["NSExtensionActivationSupportsWebURLWithMaxCount": .number(1)]), [
            "text alone is not supported", "images are not supported (public.jpeg)", "images are not supported (public.jpeg)",
            "movies are not supported (public.mpeg-4)", nil, "images are not supported (public.jpeg)",
            "images are not supported (public.jpeg)",
        ]),
        ("TRUEPREDICATE", .string("TRUEPREDICATE"), [nil, nil, nil, nil, nil, nil, nil]),
        ("files", .object(["NSExtensionActivationSupportsFileWithMaxCount": .number(3)]), [
            "text alone is not supported", nil, nil, nil, "web URLs are not supported (public.url)", nil, nil,
        ]),
    ]

    @Test("Rules × contents", arguments: rules)
    func matrix(_ name: String, _ json: JSONValue, _ expected: [String?]) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let rule = try ActivationRule.parse(json)
        for ((contentName, content), reason) in zip(try await MatrixContents(in: scratch).all, expected) {
            let verdict = rule.evaluate(content)
            #expect(verdict.reason == reason, "rule \(name) × \(contentName)")
            #expect(rule.accepts(content) == (reason == nil), "rule \(name) × \(contentName)")
        }
    }

    @Test("A more specific key takes its attachments: images never spill into files")
    func specificKeysFirst() throws {
        let rule = ActivationRule(maxImageCount: 1, maxFileCount: 2)
        #expect(rule.evaluate(ShareContent(attachments: [.png, .pdf])) == .accepted)
        #expect(rule.evaluate(ShareContent(attachments: [.png, .jpeg])).reason == "2 images, at most 1")
        #expect(rule.evaluate(ShareContent(attachments: [.pdf, .zip, .mp3])).reason == "3 files, at most 2")
        #expect(rule.key(covering: .png) == .imageCount)
        #expect(rule.key(covering: .mpeg4Movie) == .fileCount)
        #expect(rule.key(covering: .fileURL) == .fileCount)
        #expect(rule.key(covering: .url) == nil)
    }

    @Test("AttachmentsWithMaxCount covers anything and bounds the total")
    func attachments() {
        let bounded = ActivationRule(maxImageCount: 5, maxMovieCount: 5, maxAttachmentCount: 3)
        #expect(bounded.accepts(ShareContent(attachments: [.png, .png, .mpeg4Movie])))
        #expect(bounded.evaluate(ShareContent(attachments: [.png, .png, .mpeg4Movie, .quickTimeMovie])).reason == "4 attachments, at most 3")
        let any = ActivationRule(maxAttachmentCount: 2)
        #expect(any.accepts(ShareContent(attachments: [.pdf, .url])))
        #expect(any.evaluate(ShareContent(attachments: [.pdf, .url, .png])).reason == "3 attachments, at most 2")
    }

    @Test("Web pages, web URLs and file URLs")
    func urlsAndPages() {
        let pages = ActivationRule(maxWebPageCount: 1)
        #expect(pages.accepts(ShareContent(attachments: [.html])))
        #expect(pages.evaluate(ShareContent(attachments: [.url])).reason == "web URLs are not supported (public.url)")
        let urls = ActivationRule(maxWebURLCount: 2)
        #expect(urls.accepts(ShareContent(hasText: true, attachments: [.url, .url])))
        #expect(urls.evaluate(ShareContent(attachments: [.fileURL])).reason == "files are not supported (public.file-url)")
        #expect(ActivationRule(maxFileCount: 1).accepts(ShareContent(attachments: [.fileURL])))
    }

    @Test("Text: alone it needs SupportsText; a text attachment counts as text; empty is refused")
    func text() {
        let text = ActivationRule(supportsText: true)
        #expect(text.accepts(ShareContent(attachments: [.plainText])))
        #expect(text.evaluate(ShareContent(attachments: [.json])).reason == "files are not supported (public.json)")
        #expect(ActivationRule(maxImageCount: 1).evaluate(ShareContent(attachments: [.plainText])).reason
                == "text attachments are not supported (public.plain-text)")
        #expect(text.evaluate(ShareContent()).reason == "nothing to share")
        #expect(ActivationRule.truePredicate.evaluate(ShareContent()).reason == "nothing to share")
        #expect(ActivationRule.truePredicate.accepts(ShareContent(attachments: [TypeIdentifier(mimeType: "application/x-foo")!])))
    }

    @Test("A count of 0 is the same as leaving the key out")
    func zeroCount() throws {
        let rule = try ActivationRule.parse(.object([
            "NSExtensionActivationSupportsImageWithMaxCount": .number(0), "NSExtensionActivationSupportsFileWithMaxCount": .number(1),
        ]))
        #expect(rule.key(covering: .png) == .fileCount)
        #expect(rule.accepts(ShareContent(attachments: [.png])))
    }

    @Test("Parsing: every key, TRUEPREDICATE, and back to JSON")
    func parse() throws {
        let json: JSONValue = .object([
            "NSExtensionActivationSupportsText": .bool(true),
            "NSExtensionActivationSupportsImageWithMaxCount": .number(10),
            "NSExtensionActivationSupportsMovieWithMaxCount": .number(1),
            "NSExtensionActivationSupportsFileWithMaxCount": .number(2),
            "NSExtensionActivationSupportsWebURLWithMaxCount": .number(3),
            "NSExtensionActivationSupportsWebPageWithMaxCount": .number(4),
            "NSExtensionActivationSupportsAttachmentsWithMaxCount": .number(20),
        ])
        let rule = try ActivationRule.parse(json)
        #expect(rule == ActivationRule(
            supportsText: true, maxImageCount: 10, maxMovieCount: 1, maxFileCount: 2, maxWebURLCount: 3,
            maxWebPageCount: 4, maxAttachmentCount: 20))
        #expect(rule.jsonValue == json)
        #expect(rule.description == "text, images ≤ 10, movies ≤ 1, files ≤ 2, web URLs ≤ 3, web pages ≤ 4, attachments ≤ 20")
        let truePredicate = try ActivationRule.parse(.string("TRUEPREDICATE"))
        #expect(truePredicate == .truePredicate)
        #expect(truePredicate.predicate == .truePredicate)
        #expect(truePredicate.jsonValue == .string("TRUEPREDICATE"))
    }

    static let rulePath = "extensions[0].attributes.NSExtensionActivationRule"

    /// (rule as JSON text, the field of the error, its reason)
    static let parseErrors: [(String, String, String)] = [
        (#"{"NSExtensionActivationSupportsImageWithMaxCount": "two"}"#,
         "\(rulePath).NSExtensionActivationSupportsImageWithMaxCount", #"expected a whole number ≥ 0, got "two""#),
        (#"{"NSExtensionActivationSupportsMovieWithMaxCount": -1}"#,
         "\(rulePath).NSExtensionActivationSupportsMovieWithMaxCount", "expected a whole number ≥ 0, got -1"),
        (#"{"NSExtensionActivationSupportsFileWithMaxCount": 1.5}"#,
         "\(rulePath).NSExtensionActivationSupportsFileWithMaxCount", "expected a whole number ≥ 0, got 1.5"),
        (#"{"NSExtensionActivationSupportsWebURLWithMaxCount": true}"#,
         "\(rulePath).NSExtensionActivationSupportsWebURLWithMaxCount", "expected a whole number ≥ 0, got true"),
        (#"{"NSExtensionActivationSupportsText": "yes"}"#,
         "\(rulePath).NSExtensionActivationSupportsText", #"expected true or false, got "yes""#),
        (#"{"NSExtensionActivationSupportsText": true, "NSExtensionActivationSupportsImagesWithMaxCount": 1}"#,
         "\(rulePath).NSExtensionActivationSupportsImagesWithMaxCount",
         "unknown key (known: " + ActivationRule.Key.allCases.map(\.rawValue).joined(separator: ", ") + ")"),
        (#""TRUEPREDICATE OR""#, rulePath,
         #"cannot read the predicate: at character 17: expected a predicate (TRUEPREDICATE, FALSEPREDICATE, NOT, "(", ANY, SUBQUERY, extensionItems, a $variable or a number), found the end"#),
        ("1", rulePath, "expected a predicate string or an object of NSExtensionActivationSupports… keys, got 1"),
        ("[]", rulePath, "expected a predicate string or an object of NSExtensionActivationSupports… keys, got an array"),
        (#"{"NSExtensionActivationSupportsText": false, "NSExtensionActivationSupportsImageWithMaxCount": 0}"#, rulePath,
         #"the rule supports nothing, so the extension would never be offered: set a key to true or a count above 0, or use "TRUEPREDICATE""#),
    ]

    @Test("Parse errors name the full field", arguments: parseErrors)
    func parseError(_ rule: String, _ field: String, _ reason: String) throws {
        let data = Data(Manifests.shareAlike(attributes: #"{"NSExtensionActivationRule": \#(rule)}"#).utf8)
        let manifest = try AppManifest.decode(from: data)
        let error = try #require(throws: AppManifestError.self) { try ShareExtensions.validate(manifest) }
        #expect(error.field == field)
        #expect(error.reason == reason)
    }

    @Test("The message of the brief, word for word")
    func message() throws {
        let rule = #"{"NSExtensionActivationSupportsImageWithMaxCount": "two"}"#
        let manifest = try AppManifest.decode(from: Data(Manifests.shareAlike(attributes: #"{"NSExtensionActivationRule": \#(rule)}"#).utf8))
        let error = try #require(throws: AppManifestError.self) { try ShareExtensions.validate(manifest) }
        #expect(error.description
                == #"extensions[0].attributes.NSExtensionActivationRule.NSExtensionActivationSupportsImageWithMaxCount: expected a whole number ≥ 0, got "two""#)
    }
}
