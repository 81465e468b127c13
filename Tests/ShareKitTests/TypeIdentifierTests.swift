import Foundation
import ShareKit
import Testing

@Suite("Type identifiers: conformance, MIME types, extensions")
struct TypeIdentifierTests {
    /// (type, a supertype it conforms to) as Apple declares them.
    static let conforming: [(TypeIdentifier, TypeIdentifier)] = [
        (.jpeg, .image), (.jpeg, .data), (.jpeg, .content), (.jpeg, .item),
        (.png, .image), (.gif, .image), (.webP, .image), (.tiff, .image),
        (.heic, .heifStandard), (.heic, .image),
        (.image, .data), (.image, .content), (.data, .item),
        (.mpeg4Movie, .movie), (.quickTimeMovie, .movie), (.movie, .audiovisualContent),
        (.mpeg4Movie, .audiovisualContent), (.mpeg4Movie, .data), (.mpeg4Movie, .content),
        (.mp3, .audio), (.audio, .audiovisualContent), (.audio, .data),
        (.utf8PlainText, .plainText), (.utf8PlainText, .text), (.plainText, .text),
        (.html, .text), (.json, .text), (.xml, .text), (.text, .data), (.text, .content),
        (.fileURL, .url), (.url, .data), (.fileURL, .item),
        (.pdf, .data), (.pdf, .compositeContent), (.pdf, .content),
        (.zip, .archive), (.archive, .data), (.compositeContent, .content),
    ]

    /// Pairs that must not conform, the mistakes an activation rule would pay for.
    static let notConforming: [(TypeIdentifier, TypeIdentifier)] = [
        (.image, .jpeg), (.jpeg, .png), (.png, .movie), (.mp3, .movie), (.movie, .image),
        (.url, .fileURL), (.url, .text), (.html, .plainText), (.json, .plainText),
        (.text, .image), (.content, .data), (.data, .content), (.item, .data),
        (.pdf, .text), (.zip, .content), (.plainText, .html),
    ]

    @Test("Apple's conformance graph", arguments: conforming)
    func conforms(_ type: TypeIdentifier, _ supertype: TypeIdentifier) {
        #expect(type.conforms(to: supertype))
        #expect(type.supertypes.contains(supertype))
        #expect(supertype.isSupertype(of: type))
    }

    @Test("Pairs that do not conform", arguments: notConforming)
    func doesNotConform(_ type: TypeIdentifier, _ other: TypeIdentifier) {
        #expect(!type.conforms(to: other))
    }

    @Test("Conformance is reflexive; supertypes exclude the type itself")
    func reflexive() {
        for type in TypeIdentifier.declared {
            #expect(type.conforms(to: type))
            #expect(!type.supertypes.contains(type))
        }
        #expect(TypeIdentifier("com.example.unknown").conforms(to: TypeIdentifier("com.example.unknown")))
    }

    @Test("Every declared type but the roots reaches public.item; transitivity holds")
    func transitive() {
        for type in TypeIdentifier.declared where type != .item && type != .content && type != .compositeContent {
            #expect(type.conforms(to: .item), "\(type)")
        }
        for type in TypeIdentifier.declared {
            for middle in type.supertypes {
                #expect(middle.supertypes.isSubset(of: type.supertypes), "\(type) → \(middle)")
            }
        }
        #expect(TypeIdentifier.jpeg.supertypes == [.image, .data, .content, .item])
    }

    @Test("MIME type → type → preferred MIME type",
          arguments: [
            ("image/jpeg", TypeIdentifier.jpeg), ("image/png", .png), ("image/gif", .gif), ("image/webp", .webP),
            ("image/heic", .heic), ("image/tiff", .tiff), ("video/mp4", .mpeg4Movie), ("video/quicktime", .quickTimeMovie),
            ("audio/mpeg", .mp3), ("text/plain", .plainText), ("text/html", .html), ("application/json", .json),
            ("application/pdf", .pdf), ("application/zip", .zip), ("application/octet-stream", .data),
          ])
    func mimeRoundTrip(_ mime: String, _ type: TypeIdentifier) {
        #expect(TypeIdentifier(mimeType: mime) == type)
        #expect(type.preferredMIMEType == mime)
    }

    @Test("Filename extension → type → preferred extension",
          arguments: [
            ("jpeg", TypeIdentifier.jpeg), ("png", .png), ("gif", .gif), ("webp", .webP), ("heic", .heic),
            ("tiff", .tiff), ("mp4", .mpeg4Movie), ("mov", .quickTimeMovie), ("mp3", .mp3), ("txt", .plainText),
            ("html", .html), ("json", .json), ("pdf", .pdf), ("zip", .zip),
          ])
    func extensionRoundTrip(_ ext: String, _ type: TypeIdentifier) {
        #expect(TypeIdentifier(filenameExtension: ext) == type)
        #expect(type.preferredFilenameExtension == ext)
    }

    @Test("Aliases, case, dots and parameters")
    func aliases() {
        #expect(TypeIdentifier(filenameExtension: "JPG") == .jpeg)
        #expect(TypeIdentifier(filenameExtension: ".jpg") == .jpeg)
        #expect(TypeIdentifier(filenameExtension: "htm") == .html)
        #expect(TypeIdentifier(filenameExtension: "nope") == nil)
        #expect(TypeIdentifier(mimeType: "image/jpg") == .jpeg)
        #expect(TypeIdentifier(mimeType: "Text/Plain; charset=utf-8") == .plainText)
        #expect(TypeIdentifier(mimeType: "text/xml") == .xml)
        #expect(TypeIdentifier.image.preferredMIMEType == nil)
        #expect(TypeIdentifier.url.preferredFilenameExtension == nil)
    }

    @Test("An unknown MIME type gives a dynamic identifier conforming to public.data")
    func dynamic() throws {
        let type = try #require(TypeIdentifier(mimeType: "Application/X-Foo; v=1"))
        #expect(type.rawValue == "dyn.mime.application/x-foo")
        #expect(type.isDynamic)
        #expect(!type.isDeclared)
        #expect(type.conforms(to: .data))
        #expect(type.conforms(to: .item))
        #expect(!type.conforms(to: .content))
        #expect(type.preferredMIMEType == "application/x-foo")
        #expect(TypeIdentifier(mimeType: "image/x-foo")?.conforms(to: .image) == false)
    }

    @Test("Malformed MIME types give nil", arguments: ["", "text", "text/", "/plain", "a/b/c", "te xt/plain", "text/pl\"ain"])
    func malformedMIME(_ mime: String) {
        #expect(TypeIdentifier(mimeType: mime) == nil)
    }

    @Test("Codable as its raw string")
    func codable() throws {
        let data = try JSONEncoder().encode([TypeIdentifier.jpeg])
        #expect(String(decoding: data, as: UTF8.self) == #"["public.jpeg"]"#)
        #expect(try JSONDecoder().decode([TypeIdentifier].self, from: data) == [.jpeg])
        #expect(TypeIdentifier.png.description == "public.png")
    }
}
