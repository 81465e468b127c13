import FerryCore
import FerryProtocol
import Foundation
import NIOCore
import Testing

/// An event whose kind is spliced in as stored decodes as the one the coder encodes whole.
@Suite("Events from stored JSON")
struct StoredEventEncodingTests {
    static let sessions = ["com.example.bg", "a \"quoted\" name", "back\\slash", "tab\tnew\nline\r", "bell\u{07}", "é ü 日本 🚀", ""]
    static let times: [(Date?, Date?)] = [
        (nil, nil), (Date(timeIntervalSince1970: 1_795_000_000.123456), nil),
        (Date(timeIntervalSince1970: 1_795_000_000.25), Date(timeIntervalSince1970: 1_795_000_000.2500007)),
        (Date(timeIntervalSince1970: 0.1), Date(timeIntervalSince1970: 1e-7)),
    ]

    @Test("every kind, tricky session names, with and without task and times: the same DaemonMessage as encoding it whole")
    func splicedEqualsWhole() throws {
        let coder = MessageCoder()
        let kinds = Fixtures.eventKinds + [
            .response(ResponseHead(statusCode: 200, headers: ["X-Quote": "say \"hi\"\\", "X-Ünï": "çødé"], url: URL(string: "https://example.com/ä?q=1"))),
            .failed(TransferFailure(code: "http404", message: "line one\nline two\t\"quoted\"")),
            .data(Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })),
        ]
        for session in Self.sessions {
            for kind in kinds {
                for task in [nil, 7] as [Int?] {
                    for (stored, committed) in Self.times {
                        let whole = Event(sequence: 42, sessionIdentifier: session, taskIdentifier: task, kind: kind, storedAt: stored, committedAt: committed)
                        let kindJSON = String(buffer: try coder.encode(kind))
                        let spliced = try #require(coder.encodeEvents(
                            [StoredEvent(sequence: 42, taskIdentifier: task, kindJSON: kindJSON, storedAt: stored, committedAt: committed)],
                            sessionIdentifier: session).first)
                        let decoded = try coder.decode(DaemonMessage.self, from: spliced)
                        #expect(decoded == .event(whole), "session \(session.debugDescription), \(kind.typeName)")
                        // And valid JSON for any reader, not only Ferry's decoder.
                        #expect((try? JSONSerialization.jsonObject(with: Data(spliced.readableBytesView))) != nil)
                    }
                }
            }
        }
    }
}
