import FerryCore
import FerryProtocol
import Foundation
import NIOCore
import Testing

/// The messages written by hand are the encoder's text, byte for byte.
@Suite("Frequent messages written without the encoder")
struct FrequentMessagesTests {
    static let sessions = StoredEventEncodingTests.sessions + ["\u{01}\u{1F}\u{08}\u{0C}/slash", "\u{7F}\u{2028}"]

    /// The same value through `JSONEncoder` (the generic `encode`, reached through an existential).
    static func throughEncoder(_ value: any Encodable) throws -> ByteBuffer { try MessageCoder().encode(value) }

    @Test("progress with and without expected sizes, eventsFinished, for tricky session names")
    func messages() throws {
        let coder = MessageCoder()
        for session in Self.sessions {
            let messages: [DaemonMessage] = [
                .progress(TaskProgress(sessionIdentifier: session, taskIdentifier: 3)),
                .progress(TaskProgress(
                    sessionIdentifier: session, taskIdentifier: 12, bytesSent: 5, bytesReceived: 1 << 40,
                    bytesExpectedToSend: 6, bytesExpectedToReceive: -1)),
                .progress(TaskProgress(sessionIdentifier: session, taskIdentifier: 0, bytesReceived: 9, bytesExpectedToReceive: 10)),
                .eventsFinished(sessionIdentifier: session),
            ]
            for message in messages {
                let written = try coder.encode(message)
                #expect(String(buffer: written) == String(buffer: try Self.throughEncoder(message)), "\(message)")
                #expect(try coder.decode(DaemonMessage.self, from: written) == message)
            }
        }
    }

    @Test("the response, data and completed kinds as stored: the encoder's text")
    func kinds() throws {
        let coder = MessageCoder()
        var kinds: [EventKind] = [.completed, .data(Data()), .data(Data([0, 255, 10])), .data(Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }))]
        let tricky: HeaderFields = [
            "Content-Type": "text/plain; charset=\"utf-8\"", "X-Path": "/a\\b/c", "X-Control": "\u{01}\t\u{1F}\u{7F}",
            "X-Unicode": "caf\u{E9} \u{2028} \u{1F600}", "Set-Cookie": "a=1", "set-cookie": "b=2", "": "",
        ]
        let urls: [URL?] = [
            nil, URL(string: "http://127.0.0.1:8080/"), URL(string: "https://example.com/a%20b/c?q=1&r=/x#frag"),
            URL(string: "http://[::1]:81/caf%C3%A9?x=%22y%22"), URL(string: "file:///tmp/a%20b"),
        ]
        for url in urls {
            for headers in [HeaderFields(), tricky] {
                for status in [200, 404, 0, 999] { kinds.append(.response(ResponseHead(statusCode: status, headers: headers, url: url))) }
            }
        }
        for kind in kinds {
            let written = try coder.encode(kind)
            #expect(String(buffer: written) == String(buffer: try Self.throughEncoder(kind)), "\(kind.typeName)")
            #expect(try coder.decode(EventKind.self, from: written) == kind)
        }
    }
}
