import FerryCore
@testable import FerryProtocol
import Foundation
import NIOCore
import Testing

/// The messages an app reads most are read without `JSONDecoder`, into the value the decoder
/// gives; whatever the reader does not fully understand goes to the decoder, errors included.
@Suite("Frequent messages read without the decoder")
struct FrequentMessageReaderTests {
    static let coder = MessageCoder()

    /// A decoding's answer: the message, or the error's code.
    enum Answer: Equatable {
        case message(DaemonMessage)
        case refused(FerryProtocolError.Code)
    }

    static func throughDecoder(_ payload: ByteBuffer) -> Answer {
        do throws(FerryProtocolError) {
            return .message(try coder.decodeWithDecoder(DaemonMessage.self, from: payload))
        } catch {
            return .refused(error.code)
        }
    }

    static func publicDecode(_ payload: ByteBuffer) -> Answer {
        do throws(FerryProtocolError) {
            return .message(try coder.decode(DaemonMessage.self, from: payload))
        } catch {
            return .refused(error.code)
        }
    }

    static let messages: [DaemonMessage] = {
        var messages: [DaemonMessage] = []
        let heads = [
            ResponseHead(statusCode: 200),
            ResponseHead(statusCode: 404, headers: ["Content-Type": "text/plain; charset=utf-8", "X-Odd": "\"q\" \\ \u{01} é 🚀"], url: URL(string: "http://127.0.0.1:8080/a%20b?c=d&e=/f")),
        ]
        let kinds: [EventKind] = [
            .completed, .data(Data()), .data(Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) })),
            .downloadFinished(DownloadFinished(location: "/var/tmp/ferry/data/downloads/s/7.download")),
            .failed(TransferFailure(code: "networkConnectionLost", message: "the connection closed after 5 of 9 bytes")),
            .failed(TransferFailure(code: "cancelled", message: "line\nbreak", resumeData: Data([1, 2, 3, 250]))),
        ] + heads.map { .response($0) }
        for session in StoredEventEncodingTests.sessions {
            for (index, kind) in kinds.enumerated() {
                for (stored, committed) in StoredEventEncodingTests.times {
                    messages.append(.event(Event(
                        sequence: Int64(index) * 1_000_003, sessionIdentifier: session, taskIdentifier: index == 0 ? nil : index,
                        kind: kind, storedAt: stored, committedAt: committed)))
                }
            }
            messages.append(.progress(TaskProgress(sessionIdentifier: session, taskIdentifier: 3)))
            messages.append(.progress(TaskProgress(
                sessionIdentifier: session, taskIdentifier: 12, bytesSent: 5, bytesReceived: 1 << 40, bytesExpectedToSend: 6, bytesExpectedToReceive: -1)))
            messages.append(.reply(id: 0, .acknowledged(Acknowledge(sessionIdentifier: session, upToSequence: 9))))
            messages.append(.reply(id: .max, .acknowledged(Acknowledge(sessionIdentifier: session, upToSequence: -1, sequences: [11, 12, Int64.max]))))
        }
        for (index, task) in FrequentMessagesTests.tasks.enumerated() {
            messages.append(.reply(id: UInt64(index), .submitted(Submitted(task: task, existing: index % 3 == 0))))
        }
        return messages
    }()

    @Test("every kind of event, progress, acknowledged and submitted reply, as ferryd writes them: read by hand, the decoder's value")
    func sameAsTheDecoder() throws {
        for message in Self.messages {
            let payload = try Self.coder.encode(message)
            let read = FrequentMessageReader.message(payload)
            #expect(read != nil, "read by hand: \(String(buffer: payload))")
            #expect(read == message)
            #expect(Self.throughDecoder(payload) == .message(message))
        }
    }

    @Test("written otherwise (key order, white space, unknown fields, escapes, nulls): still the decoder's value")
    func otherSpellings() throws {
        let spellings = [
            #"{ "type" : "event", "kind": {"type":"completed", "later": [1, {"x": null}]}, "sequence": 7, "sessionIdentifier": "s\/\u00e9\ud83d\ude80", "taskIdentifier": null, "storedAt": 1.5e9, "extra": true }"#,
            #"{"taskIdentifier":3,"sessionIdentifier":"s","type":"progress","bytesSent":0,"bytesReceived":-0,"bytesExpectedToSend":null}"#,
            "{\"type\":\"reply\",\"requestID\":18446744073709551615,\"reply\":{\"type\":\"acknowledged\",\"sessionIdentifier\":\"s\",\"upToSequence\":3,\"sequences\":null}}\n",
            #"{"type":"event","sequence":1,"sessionIdentifier":"s","kind":{"type":"response","statusCode":200,"headers":[["A","\t"]],"url":null}}"#,
            // A submission's answer: no priority (0.5), nulls, fields in another order, one unknown.
            #"{"requestID":4,"type":"reply","reply":{"type":"submitted","existing":true,"task":{"taskIdentifier":2,"sessionIdentifier":"s","state":"waiting","kind":"download","request":{"url":"http://h/x","method":"GET","headers":[]},"bytesSent":0,"bytesReceived":0,"attemptCount":0,"lastError":null,"retryPolicy":{"maximumAttempts":2,"initialDelay":0.5,"maximumDelay":2,"maximumRetryAfter":0,"retryableStatuses":[]},"eventsPending":null,"future":[1]}}}"#,
        ]
        for spelling in spellings {
            let payload = ByteBuffer(string: spelling)
            let read = try #require(FrequentMessageReader.message(payload), "\(spelling)")
            #expect(Self.throughDecoder(payload) == .message(read), "\(spelling)")
        }
    }

    @Test("what the reader does not take goes to the decoder, which answers as before (value or error)")
    func leftToTheDecoder() {
        var invalidUTF8 = ByteBuffer(string: #"{"type":"progress","sessionIdentifier":""#)
        invalidUTF8.writeBytes([0xC3, 0x28])
        invalidUTF8.writeString(#"","taskIdentifier":1,"bytesSent":0,"bytesReceived":0}"#)
        let cases: [ByteBuffer] = [
            ByteBuffer(string: #"{"type":"progress","sessionIdentifier":"s","taskIdentifier":1.0,"bytesSent":0,"bytesReceived":0}"#),
            ByteBuffer(string: #"{"type":"progress","sessionIdentifier":"s","taskIdentifier":1,"bytesSent":1e2,"bytesReceived":0}"#),
            ByteBuffer(string: #"{"type":"progress","type":"progress","sessionIdentifier":"s","taskIdentifier":1,"bytesSent":0,"bytesReceived":0}"#),
            ByteBuffer(string: #"{"type":"event","sequence":1,"sessionIdentifier":"s","kind":{"type":"teleported"}}"#),
            ByteBuffer(string: #"{"type":"event","sequence":1,"sessionIdentifier":"\ud800","kind":{"type":"completed"}}"#),
            ByteBuffer(string: #"{"type":"event","sequence":1,"sessionIdentifier":"s","kind":{"type":"completed"}} trailing"#),
            ByteBuffer(string: #"{"type":"event","sequence":"1","sessionIdentifier":"s","kind":{"type":"completed"}}"#),
            ByteBuffer(string: #"{"type":"event","sequence":1,"kind":{"type":"completed"}}"#),
            ByteBuffer(string: #"{"type":"eventsFinished","sessionIdentifier":"s"}"#),
            ByteBuffer(string: #"{"type":"reply","requestID":1,"reply":{"type":"invalidated"}}"#),
            // Submissions' answers the decoder reads (an error) or refuses (no attempts, a status out of range, a state unknown).
            ByteBuffer(string: #"{"type":"reply","requestID":1,"reply":{"type":"submitted","existing":false,"task":{"taskIdentifier":2,"sessionIdentifier":"s","state":"waiting","kind":"download","request":{"url":"http://h/x","method":"GET","headers":[]},"bytesSent":0,"bytesReceived":0,"attemptCount":0,"lastError":{"code":"internalError","message":"boom"}}}}"#),
            ByteBuffer(string: #"{"type":"reply","requestID":1,"reply":{"type":"submitted","existing":false,"task":{"taskIdentifier":2,"sessionIdentifier":"s","state":"waiting","kind":"download","request":{"url":"http://h/x","method":"GET","headers":[]},"bytesSent":0,"bytesReceived":0,"attemptCount":0,"retryPolicy":{"maximumAttempts":0,"initialDelay":1,"maximumDelay":2,"maximumRetryAfter":3,"retryableStatuses":[]}}}}"#),
            ByteBuffer(string: #"{"type":"reply","requestID":1,"reply":{"type":"submitted","existing":false,"task":{"taskIdentifier":2,"sessionIdentifier":"s","state":"waiting","kind":"download","request":{"url":"http://h/x","method":"GET","headers":[]},"bytesSent":0,"bytesReceived":0,"attemptCount":0,"retryPolicy":{"maximumAttempts":2,"initialDelay":1,"maximumDelay":2,"maximumRetryAfter":3,"retryableStatuses":[600]}}}}"#),
            ByteBuffer(string: #"{"type":"reply","requestID":1,"reply":{"type":"submitted","existing":false,"task":{"taskIdentifier":2,"sessionIdentifier":"s","state":"teleporting","kind":"download","request":{"url":"http://h/x","method":"GET","headers":[]},"bytesSent":0,"bytesReceived":0,"attemptCount":0}}}"#),
            ByteBuffer(string: String(repeating: "[", count: 40) + String(repeating: "]", count: 40)),
            ByteBuffer(string: "not json"),
            invalidUTF8,
        ]
        for payload in cases {
            #expect(FrequentMessageReader.message(payload) == nil, "\(String(buffer: payload))")
            #expect(Self.publicDecode(payload) == Self.throughDecoder(payload), "\(String(buffer: payload))")
        }
    }
}
