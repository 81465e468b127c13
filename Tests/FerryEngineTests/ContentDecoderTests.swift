@testable import FerryEngine
import FerryCore
import FerryTestSupport
import Foundation
import NIOCore
import Testing

/// Content codings undone by the engine: bodies coded by the real tools (gzip(1), Python's
/// zlib), fed whole and a byte at a time; damaged, cut short, padded and inflated ones refused.
@Suite("Content decoding")
struct ContentDecoderTests {
    static let text = Data(String(repeating: "Byte Club notes, shared by every member of the club.\n", count: 500).utf8)

    /// `text` coded by Python's zlib: `zlib` (RFC 1950, what `deflate` names), `raw` deflate
    /// (what some servers send), or `gzip`.
    static func coded(_ text: Data, as format: String) throws -> Data {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-coding-\(UUID().uuidString)")
        try text.write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let wbits = ["zlib": "15", "raw": "-15", "gzip": "31"][format]!
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import sys, zlib; c = zlib.compressobj(9, zlib.DEFLATED, \(wbits)); "
            + "sys.stdout.buffer.write(c.compress(open(sys.argv[1], 'rb').read()) + c.flush())", input.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return output
    }

    /// `coded` through a decoder for `coding`, in pieces of `piece` bytes.
    static func decoded(_ coded: Data, coding: String, piece: Int) throws -> Data {
        let decoder = try #require(try ContentDecoder(contentEncoding: coding, url: nil))
        var plain = Data()
        var offset = 0
        while offset < coded.count {
            let end = min(offset + piece, coded.count)
            plain.append(contentsOf: try decoder.decode(ByteBuffer(bytes: coded[offset..<end])).readableBytesView)
            offset = end
        }
        try decoder.finish()
        return plain
    }

    @Test("gzip (from gzip(1) and zlib), x-gzip, deflate as zlib and as raw deflate; whole, and a byte at a time", arguments: [1, 7, 1 << 20])
    func codings(piece: Int) throws {
        let gzipTool = Process()
        gzipTool.executableURL = URL(fileURLWithPath: "/bin/gzip")
        gzipTool.arguments = ["-c"]
        let (input, output) = (Pipe(), Pipe())
        gzipTool.standardInput = input
        gzipTool.standardOutput = output
        try gzipTool.run()
        input.fileHandleForWriting.write(Self.text)
        try input.fileHandleForWriting.close()
        let fromTool = output.fileHandleForReading.readDataToEndOfFile()
        gzipTool.waitUntilExit()

        #expect(try Self.decoded(fromTool, coding: "gzip", piece: piece) == Self.text)
        #expect(try Self.decoded(Self.coded(Self.text, as: "gzip"), coding: "x-gzip", piece: piece) == Self.text)
        #expect(try Self.decoded(Self.coded(Self.text, as: "zlib"), coding: "deflate", piece: piece) == Self.text)
        #expect(try Self.decoded(Self.coded(Self.text, as: "raw"), coding: " Deflate ", piece: piece) == Self.text)
    }

    @Test("identity, no coding and codings the engine does not undo pass the body as it is")
    func notDecoded() throws {
        for coding in [nil, "identity", "br", "compress", ""] {
            #expect(try ContentDecoder(contentEncoding: coding, url: nil) == nil, "\(coding ?? "none")")
        }
    }

    @Test("damaged, cut short, followed by other bytes, or more than 1,000 times its size: cannotDecodeContentData")
    func refused() throws {
        let gzip = try Self.coded(Self.text, as: "gzip")
        var damaged = gzip
        damaged[damaged.count / 2] ^= 0xFF
        damaged[damaged.count / 2 + 1] ^= 0xFF
        let cases: [(String, Data)] = [
            ("damaged", damaged),
            ("cut short", gzip.prefix(gzip.count - 10)),
            ("padded", gzip + Data("trailing".utf8)),
            ("not gzip at all", Data(TestContent.bytes(count: 5000, seed: 3))),
            ("a bomb", try Self.coded(Data(count: 4 << 20), as: "gzip")),
        ]
        for (name, body) in cases {
            #expect(throws: FerryError.self, "\(name)") { _ = try Self.decoded(body, coding: "gzip", piece: 4096) }
            do {
                _ = try Self.decoded(body, coding: "gzip", piece: 4096)
            } catch let error as FerryError {
                #expect(error.code == .cannotDecodeContentData, "\(name): \(error)")
            }
        }
    }

    @Test("an empty body labelled gzip is an empty body")
    func emptyBody() throws {
        #expect(try Self.decoded(Data(), coding: "gzip", piece: 10).isEmpty)
    }

    @Test("through the engine: a server that labels plain bytes gzip fails the task with cannotDecodeContentData; a download asks for identity")
    func lyingServer() async throws {
        try await withServerAndEngine { server, engine in
            var transfer = Transfer(request: Request(url: url(server, "/bytes/5000?seed=4&claimCoding=gzip")))
            transfer.destination = .memory(limit: 1 << 20)
            await expectFerryError(.cannotDecodeContentData) { try await engine.run(transfer) }
            let asked = try await engine.run(Transfer(request: Request(url: url(server, "/headers"))))
            let headers = String(decoding: try #require(asked.body), as: UTF8.self)
            #expect(headers.contains(#""accept-encoding":"gzip, deflate""#), "\(headers)")
        }
    }
}
