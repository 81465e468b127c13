import FerryProtocol
import Foundation
import NIOCore
import Testing

@Suite("docs/protocol.md")
struct DocsExampleTests {
    /// The `→`/`←` lines of the example exchange.
    static func exampleLines() throws -> [(outbound: Bool, json: String)] {
        let docs = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/protocol.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            if line.hasPrefix("→ ") { return (true, String(line.dropFirst(2))) }
            if line.hasPrefix("← ") { return (false, String(line.dropFirst(2))) }
            return nil
        }
    }

    @Test("every line of the example exchange decodes, and encodes back to the same bytes")
    func exampleIsTheWireForm() throws {
        let lines = try Self.exampleLines()
        #expect(lines.count >= 20)
        let coder = MessageCoder()
        for line in lines {
            let payload = ByteBuffer(string: line.json)
            let again: ByteBuffer
            if line.outbound {
                again = try coder.encode(try coder.decode(ClientMessage.self, from: payload))
            } else {
                again = try coder.encode(try coder.decode(DaemonMessage.self, from: payload))
            }
            #expect(String(buffer: again) == line.json)
        }
    }
}
