import Foundation
import ShareKit
import Testing

@Suite("Content detection: libmagic decides, the name refines")
struct ContentDetectionTests {
    @Test("Images written by ImageMagick")
    func images() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        for (name, type) in [("a.jpg", TypeIdentifier.jpeg), ("a.png", .png), ("a.gif", .gif), ("a.webp", .webP), ("a.tiff", .tiff)] {
            let url = try await scratch.convert("-size", "40x30", "xc:red", name)
            #expect(try TypeIdentifier.detect(fileAt: url) == type, "\(name)")
        }
    }

    @Test("Movies from a hand-written ftyp box, a PDF, text, JSON, HTML")
    func others() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cases: [(String, Data, TypeIdentifier)] = [
            ("clip.mp4", Samples.isoMedia(brand: "mp42"), .mpeg4Movie),
            ("clip.mov", Samples.isoMedia(brand: "qt  "), .quickTimeMovie),
            ("doc.pdf", Samples.pdf, .pdf),
            ("note.txt", Data("Highland Cow\n".utf8), .plainText),
            ("note", Data("Highland Cow\n".utf8), .plainText),
            ("data.json", Data(#"{"name": "cow", "legs": 4}"#.utf8), .json),
            ("page.html", Data("<!DOCTYPE html>\n<html><body>hi</body></html>\n".utf8), .html),
        ]
        for (name, bytes, type) in cases {
            let url = try scratch.write(bytes, to: name)
            #expect(try TypeIdentifier.detect(fileAt: url) == type, "\(name)")
        }
        #expect(try TypeIdentifier.detect(fileAt: scratch.url("clip.mp4")).conforms(to: .movie))
    }

    @Test("The name refines within what the bytes say")
    func refinement() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // libmagic calls this text/plain (it is not valid JSON); the name says which text.
        let broken = try scratch.write(#"{"name": "cow""#, to: "broken.json")
        #expect(try TypeIdentifier.detect(fileAt: broken) == .json)
        let csv = try scratch.write("a\n", to: "one.csv")
        #expect(try TypeIdentifier.detect(fileAt: csv) == .commaSeparatedText)
        // Content wins over the name.
        try await scratch.convert("-size", "8x8", "xc:blue", "real.png")
        try FileManager.default.moveItem(at: scratch.url("real.png"), to: scratch.url("photo.jpg"))
        #expect(try TypeIdentifier.detect(fileAt: scratch.url("photo.jpg")) == .png)
        let text = try scratch.write("not a picture\n", to: "fake.jpg")
        #expect(try TypeIdentifier.detect(fileAt: text) == .plainText)
        let binary = try scratch.write(Data([0x00, 0x01, 0x02, 0xFE, 0x7F, 0x80, 0x00, 0x13]), to: "fake.png")
        #expect(try TypeIdentifier.detect(fileAt: binary) == .data)
        let html = try scratch.write("<!DOCTYPE html>\n<html><body>hi</body></html>\n", to: "page.txt")
        #expect(try TypeIdentifier.detect(fileAt: html) == .html)
    }

    @Test("Empty files: text when the name says text, else public.data")
    func empty() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        #expect(try TypeIdentifier.detect(fileAt: scratch.write(Data(), to: "empty.txt")) == .plainText)
        #expect(try TypeIdentifier.detect(fileAt: scratch.write(Data(), to: "empty.jpg")) == .data)
        #expect(try TypeIdentifier.detect(fileAt: scratch.write(Data(), to: "empty")) == .data)
        #expect(try TypeIdentifier.detect(data: Data()) == .data)
        #expect(try TypeIdentifier.detect(data: Data(), filename: "note.txt") == .plainText)
    }

    @Test("Bytes in memory, with and without a name")
    func data() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let png = try await Data(contentsOf: scratch.convert("-size", "8x8", "xc:blue", "x.png"))
        #expect(try TypeIdentifier.detect(data: png) == .png)
        #expect(try TypeIdentifier.detect(data: png, filename: "x.jpg") == .png)
        #expect(try TypeIdentifier.detect(data: Data(#"{"a": [1, 2]}"#.utf8)) == .json)
        #expect(try TypeIdentifier.detect(data: Data("[1".utf8), filename: "list.json") == .json)
        #expect(try TypeIdentifier.detect(data: Samples.pdf) == .pdf)
    }

    @Test("A missing file is an error naming it")
    func missing() throws {
        let path = "/tmp/sharekit-missing-\(UUID().uuidString).jpg"
        let error = try #require(throws: ShareKitError.self) {
            try TypeIdentifier.detect(fileAt: URL(fileURLWithPath: path))
        }
        #expect(error.code == .fileNotFound)
        #expect(error.path == path)
        #expect(error.description.contains(path))
    }

    @Test("A directory is public.folder; symbolic links are followed")
    func directoryAndLink() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        #expect(try TypeIdentifier.detect(fileAt: scratch.root) == .folder)
        let target = try await scratch.convert("-size", "8x8", "xc:blue", "x.gif")
        try FileManager.default.createSymbolicLink(at: scratch.url("link"), withDestinationURL: target)
        #expect(try TypeIdentifier.detect(fileAt: scratch.url("link")) == .gif)
    }

    @Test("Many threads at once share the one libmagic cookie safely")
    func concurrent() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let png = try await scratch.convert("-size", "8x8", "xc:blue", "x.png")
        let text = try scratch.write("hello\n", to: "x.txt")
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    let (url, type) = index.isMultiple(of: 2) ? (png, TypeIdentifier.png) : (text, .plainText)
                    return (try? TypeIdentifier.detect(fileAt: url)) == type
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 64)
        #expect(results.allSatisfy { $0 })
    }
}
