import FerryApps
import Foundation
import ShareKit
import Testing

/// Predicate strings as extensions ship them in Info.plist, read and matched against content
/// made of real files (``MatrixContents``) or of type identifiers.
@Suite("Activation rules as predicate strings")
struct ActivationPredicateTests {
    /// A rule over the one extension item's attachments: `SUBQUERY(extensionItems, $extensionItem, <inner>).@count == 1`.
    static func item(_ inner: String) -> String {
        "SUBQUERY (extensionItems, $extensionItem, \(inner)).@count == 1"
    }

    /// `SUBQUERY ($extensionItem.attachments, $attachment, <test>).@count`
    static func attachments(_ test: String) -> String {
        "SUBQUERY ($extensionItem.attachments, $attachment, \(test)).@count"
    }

    static func conforms(_ type: String) -> String { "ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO \"\(type)\"" }

    static let exactlyOneImage = item(attachments(conforms("public.image")) + " == 1")
    static let imagesOnly = item(attachments(conforms("public.image")) + " == $extensionItem.attachments.@count AND $extensionItem.attachments.@count >= 1")
    static let oneImageOrMovie = item(attachments("\(conforms("public.image")) || \(conforms("public.movie"))") + " == 1")
    static let textOrURLs = item("$extensionItem.attributedContentText != nil OR " + attachments(conforms("public.url")) + " >= 1")
    /// Files are attachments that are not URLs (`public.url` conforms to `public.data` too).
    static let atMostThreeFiles = item("$extensionItem.attachments.@count <= 3 AND " + attachments("NOT " + conforms("public.url")) + " == $extensionItem.attachments.@count")

    /// Each rule with its verdict for each content of ``MatrixContents/all`` in order (text
    /// only, one image, two images, a movie, a URL, image + text, image + movie): `nil` for
    /// accepted, else the reason.
    static let rules: [(String, String, [String?])] = [
        ("exactly one image", exactlyOneImage, [
            "0 of 1 extension items match, expected == 1: no attachments, expected == 1",
            nil,
            "0 of 1 extension items match, expected == 1: 2 of 2 attachments match, expected == 1",
            "0 of 1 extension items match, expected == 1: 0 of 1 attachments match, expected == 1: public.mpeg-4 does not conform to public.image",
            "0 of 1 extension items match, expected == 1: 0 of 1 attachments match, expected == 1: public.url does not conform to public.image",
            nil,
            nil,
        ]),
        ("images only", imagesOnly, [
            "0 of 1 extension items match, expected == 1: no attachments, expected >= 1",
            nil, nil,
            "0 of 1 extension items match, expected == 1: 0 of 1 attachments match, expected == 1 (1 attachment): public.mpeg-4 does not conform to public.image",
            "0 of 1 extension items match, expected == 1: 0 of 1 attachments match, expected == 1 (1 attachment): public.url does not conform to public.image",
            nil,
            "0 of 1 extension items match, expected == 1: 1 of 2 attachments matches, expected == 2 (2 attachments): public.mpeg-4 does not conform to public.image",
        ]),
        ("one image or one movie", oneImageOrMovie, [
            "0 of 1 extension items match, expected == 1: no attachments, expected == 1",
            nil,
            "0 of 1 extension items match, expected == 1: 2 of 2 attachments match, expected == 1",
            nil,
            "0 of 1 extension items match, expected == 1: 0 of 1 attachments match, expected == 1: public.url does not conform to public.image; public.url does not conform to public.movie",
            nil,
            "0 of 1 extension items match, expected == 1: 2 of 2 attachments match, expected == 1",
        ]),
        ("text or URLs", textOrURLs, [
            nil,
            "0 of 1 extension items match, expected == 1: the item has no text; 0 of 1 attachments match, expected >= 1: public.jpeg does not conform to public.url",
            "0 of 1 extension items match, expected == 1: the item has no text; 0 of 2 attachments match, expected >= 1: public.jpeg does not conform to public.url",
            "0 of 1 extension items match, expected == 1: the item has no text; 0 of 1 attachments match, expected >= 1: public.mpeg-4 does not conform to public.url",
            nil,
            nil,
            "0 of 1 extension items match, expected == 1: the item has no text; 0 of 2 attachments match, expected >= 1: public.jpeg does not conform to public.url",
        ]),
        ("FALSEPREDICATE", "FALSEPREDICATE", Array(repeating: "FALSEPREDICATE accepts nothing", count: 7)),
        ("TRUEPREDICATE", "TRUEPREDICATE", Array(repeating: nil, count: 7)),
    ]

    @Test("Apple's examples × contents made of real files", arguments: rules)
    func matrix(_ name: String, _ text: String, _ expected: [String?]) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let rule = try ActivationRule.parse(.string(text))
        #expect(rule.predicate != nil)
        for ((contentName, content), reason) in zip(try await MatrixContents(in: scratch).all, expected) {
            #expect(rule.evaluate(content).reason == reason, "rule \(name) × \(contentName)")
            #expect(rule.accepts(content) == (reason == nil), "rule \(name) × \(contentName)")
        }
        #expect(rule.evaluate(ShareContent()).reason == "nothing to share")
    }

    @Test("At most N files: counts around the bound, and a URL is not a file")
    func atMostFiles() throws {
        let rule = try ActivationPredicate(Self.atMostThreeFiles)
        #expect(rule.evaluate(ShareContent(attachments: [.pdf])).isAccepted)
        #expect(rule.evaluate(ShareContent(attachments: [.pdf, .png, .zip])).isAccepted)
        #expect(rule.evaluate(ShareContent(attachments: [.pdf, .png, .zip, .mp3])).reason
                == "0 of 1 extension items match, expected == 1: 4 attachments, expected <= 3")
        #expect(rule.evaluate(ShareContent(attachments: [.pdf, .url])).reason
                == "0 of 1 extension items match, expected == 1: 1 of 2 attachments matches, expected == 2 (2 attachments): public.url conforms to public.url")
    }

    @Test("Operators, NOT, UTI-EQUALS, single quotes, keywords in any case, numbers on the left")
    func operators() throws {
        func accepts(_ text: String, _ content: ShareContent) throws -> Bool { try ActivationPredicate(text).evaluate(content).isAccepted }
        let two = ShareContent(hasText: true, attachments: [.png, .pdf])
        let pngCount = "SUBQUERY($e.attachments, $a, ANY $a.registeredTypeIdentifiers UTI-EQUALS 'public.png').@count"
        #expect(try accepts("subquery(extensionItems, $e, \(pngCount) == 1).@count == 1", two))
        #expect(try !accepts("SUBQUERY(extensionItems, $e, \(pngCount) != 1).@count == 1", two))
        #expect(try accepts("SUBQUERY(extensionItems, $e, \(pngCount) <> 0 and $e.attachments.@count > 1).@count = 1", two))
        #expect(try accepts("SUBQUERY(extensionItems, $e, \(pngCount) < 2 && $e.attachments.@count >= 2).@count =< 1", two))
        #expect(try accepts("1 == SUBQUERY(extensionItems, $e, 2 > \(pngCount)).@count", two))
        #expect(try accepts("extensionItems.@count == 1 AND NOT FALSEPREDICATE", two))
        #expect(try accepts("SUBQUERY(extensionItems, $item, NOT ($item.attributedContentText == nil)).@count => 1", two))
        #expect(try !accepts("SUBQUERY(extensionItems, $item, $item.attributedContentText == NULL).@count > 0", two))
        let jpeg = try ActivationPredicate(#"SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, SOME $a.registeredTypeIdentifiers UTI-EQUALS "public.jpeg").@count >= 1).@count == 1"#)
        #expect(jpeg.evaluate(ShareContent(attachments: [.jpeg])).isAccepted)
        #expect(jpeg.evaluate(ShareContent(attachments: [.png])).reason
                == "0 of 1 extension items match, expected == 1: 0 of 1 attachments match, expected >= 1: public.png is not public.jpeg")
        let notMovies = try ActivationPredicate("SUBQUERY(extensionItems, $e, NOT (\(Self.attachments(Self.conforms("public.movie")).replacingOccurrences(of: "$extensionItem", with: "$e")) > 0)).@count == 1")
        #expect(notMovies.evaluate(ShareContent(attachments: [.png])).isAccepted)
        #expect(notMovies.evaluate(ShareContent(attachments: [.png, .quickTimeMovie])).reason
                == "0 of 1 extension items match, expected == 1: 1 of 2 attachments matches, > 0")
    }

    @Test("Spacing does not matter to equality; the description is one line; JSON gives the source back")
    func equality() throws {
        let one = try ActivationPredicate(Self.exactlyOneImage)
        let spaced = try ActivationPredicate(Self.exactlyOneImage.replacingOccurrences(of: " ", with: "\n  "))
        #expect(one == spaced)
        #expect(spaced.description == one.description)
        #expect(one != (try ActivationPredicate(Self.oneImageOrMovie)))
        let rule = try ActivationRule.parse(.string(Self.textOrURLs))
        #expect(rule.jsonValue == .string(Self.textOrURLs))
        #expect(rule.description == Self.textOrURLs)
        #expect(rule.supportsAnything)
        #expect(!(try ActivationRule.parse(.string("FALSEPREDICATE"))).supportsAnything)
        #expect(try ActivationRule.parse(.string("TRUEPREDICATE")) == .truePredicate)
    }

    static let start = #"a predicate (TRUEPREDICATE, FALSEPREDICATE, NOT, "(", ANY, SUBQUERY, extensionItems, a $variable or a number)"#

    /// (predicate, the character where reading stops, the reason)
    static let malformed: [(String, Int, String)] = [
        ("", 1, "expected \(start), found the end"),
        ("TRUEPREDICATE AND", 18, "expected \(start), found the end"),
        ("TRUEPREDICATE TRUEPREDICATE", 15, "expected AND, OR or the end, found TRUEPREDICATE"),
        ("ALL $a.registeredTypeIdentifiers UTI-CONFORMS-TO 'public.image'", 1, "expected \(start), found ALL"),
        ("SUBQUERY(extensionItems, $e, $e.attachments.@count == 1", 56, #"expected ")", found the end"#),
        ("SUBQUERY(extensionItems, $e, $e.attachments.@count BETWEEN 1).@count == 1", 52,
         "expected a comparison (==, !=, <, <=, >, >=), found BETWEEN"),
        ("SUBQUERY(extensionItems, $e, ANY $e.registeredTypeIdentifiers UTI-CONFORMS-TO 'public.image').@count == 1", 34,
         "$e is an extension item, expected an attachment"),
        ("SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, $a.registeredTypeIdentifiers UTI-CONFORMS-TO 'public.image').@count == 1).@count == 1", 59,
         "expected ANY before $a.registeredTypeIdentifiers, found $a"),
        ("SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, ANY $a.registeredTypeIdentifiers CONTAINS 'public.image').@count == 1).@count == 1", 92,
         "expected UTI-CONFORMS-TO or UTI-EQUALS, found CONTAINS"),
        ("SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO public.image).@count == 1).@count == 1", 108,
         "expected a type identifier in quotes, found public"),
        (#"SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image).@count == 1).@count == 1"#, 147,
         #"expected the closing " of the string at character 108, found the end"#),
        ("$x.attachments.@count == 1", 1, "$x is not a SUBQUERY variable here"),
        ("SUBQUERY(extensionItems, $e, $x.attachments.@count == 1).@count == 1", 30, "$x is not a SUBQUERY variable here (in scope: $e)"),
        ("SUBQUERY(extensionItems, $e, $e.title != nil).@count == 1", 33, "expected attachments or attributedContentText after $e., found title"),
        ("SUBQUERY(extensionItems, $e, extensionItems.@count == 1).@count == 1", 30,
         "extensionItems is read outside a SUBQUERY only; inside, use its variable"),
        ("SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $e, TRUEPREDICATE).@count == 1).@count == 1", 55,
         "$e is already in use by an enclosing SUBQUERY"),
        ("extensionItems.@count == 1 + 1", 28, #"unexpected character "+""#),
        ("extensionItems.@count == 99999999999", 26, "99999999999 is too large a count"),
        ("extensionItems.count == 1", 16, "expected @count, found count"),
    ]

    @Test("Malformed predicates are refused with the character and what was expected", arguments: malformed)
    func refused(_ text: String, _ position: Int, _ reason: String) throws {
        let error = try #require(throws: ActivationPredicate.SyntaxError.self) { try ActivationPredicate(text) }
        #expect(error.position == position, "\(text)")
        #expect(error.reason == reason, "\(text)")
        #expect(error.description == "at character \(position): \(reason)")
    }

    @Test("Bounded: at most 4096 characters and 32 levels of nesting")
    func limits() throws {
        let long = "TRUEPREDICATE" + String(repeating: " ", count: 4096)
        let tooLong = try #require(throws: ActivationPredicate.SyntaxError.self) { try ActivationPredicate(long) }
        #expect(tooLong.description == "at character 4097: the predicate is 4109 characters long, at most 4096")
        #expect(try ActivationPredicate(String(repeating: "NOT ", count: 32) + "TRUEPREDICATE").evaluate(ShareContent(hasText: true)).isAccepted)
        let deep = try #require(throws: ActivationPredicate.SyntaxError.self) {
            try ActivationPredicate(String(repeating: "(", count: 40) + "TRUEPREDICATE" + String(repeating: ")", count: 40))
        }
        #expect(deep.description == "at character 33: nested more than 32 levels deep")
        let negations = try #require(throws: ActivationPredicate.SyntaxError.self) {
            try ActivationPredicate(String(repeating: "NOT ", count: 33) + "TRUEPREDICATE")
        }
        #expect(negations.position == 129)  // the 33rd NOT
    }
}
