import Foundation
@testable import FerryProtocol
import NIOCore
import Testing

@Suite("Messages round-trip through JSON")
struct MessageRoundTripTests {
    let coder = MessageCoder()

    @Test("the fixtures cover every message, request, reply and event type")
    func fixturesCoverEveryType() {
        #expect(Set(Fixtures.clientMessages.map(\.tag)) == Set(ClientMessage.Tag.allCases))
        #expect(Set(Fixtures.daemonMessages.map(\.tag)) == Set(DaemonMessage.Tag.allCases))
        #expect(Set(Fixtures.requests.map(\.tag)) == Set(Request.Tag.allCases))
        #expect(Set(Fixtures.replies.map(\.tag)) == Set(Reply.Tag.allCases))
        #expect(Set(Fixtures.eventKinds.map(\.tag)) == Set(EventKind.Tag.allCases))
    }

    @Test("every client message decodes to itself", arguments: Fixtures.clientMessages)
    func clientMessage(_ message: ClientMessage) throws {
        let payload = try coder.encode(message)
        #expect(try coder.decode(ClientMessage.self, from: payload) == message)
    }

    @Test("every daemon message decodes to itself", arguments: Fixtures.daemonMessages)
    func daemonMessage(_ message: DaemonMessage) throws {
        let payload = try coder.encode(message)
        #expect(try coder.decode(DaemonMessage.self, from: payload) == message)
    }

    @Test("the wire form is flat JSON with a type key, sorted keys and plain slashes")
    func wireShape() throws {
        let hello = try coder.encode(ClientMessage.hello(Hello(protocolVersion: 2, minimumProtocolVersion: 1, clientName: "ferry-cli", pid: 42)))
        #expect(String(buffer: hello) == #"{"clientName":"ferry-cli","minimumProtocolVersion":1,"pid":42,"protocolVersion":2,"type":"hello"}"#)

        let ack = try coder.encode(ClientMessage.request(id: 7, .acknowledge(Acknowledge(sessionIdentifier: "s", upToSequence: 3))))
        #expect(String(buffer: ack) == #"{"request":{"sessionIdentifier":"s","type":"acknowledge","upToSequence":3},"requestID":7,"type":"request"}"#)
        let taken = try coder.encode(ClientMessage.request(id: 9, .taken(EventsTaken(sessionIdentifier: "s", count: 32))))
        #expect(String(buffer: taken) == #"{"request":{"count":32,"sessionIdentifier":"s","type":"taken"},"requestID":9,"type":"request"}"#)
        let singles = try coder.encode(ClientMessage.request(id: 8, .acknowledge(Acknowledge(sessionIdentifier: "s", upToSequence: 3, sequences: [5, 6]))))
        #expect(String(buffer: singles) == #"{"request":{"sequences":[5,6],"sessionIdentifier":"s","type":"acknowledge","upToSequence":3},"requestID":8,"type":"request"}"#)

        let submit = String(buffer: try coder.encode(Request.submit(Fixtures.fullSubmission)))
        #expect(submit.contains(#""url":"https://127.0.0.1:8443/upload?name=a%20b""#))
        #expect(submit.contains(#""headers":[["Content-Type","image/jpeg"],["X-A","1"],["X-A","2"]]"#))
        #expect(submit.contains(#""earliestBeginDate":1795000000.25"#))

        let event = try coder.encode(DaemonMessage.event(Event(sequence: 5, sessionIdentifier: "s", taskIdentifier: 2, kind: .completed)))
        #expect(String(buffer: event) == #"{"kind":{"type":"completed"},"sequence":5,"sessionIdentifier":"s","taskIdentifier":2,"type":"event"}"#)
    }

    @Test("the largest data event fits in a frame")
    func largestDataEventFits() throws {
        let event = DaemonMessage.event(Event(
            sequence: Int64.max, sessionIdentifier: String(repeating: "s", count: 1024), taskIdentifier: Int.max,
            kind: .data(Data(repeating: 0xff, count: EventKind.maximumDataSize))))
        let payload = try coder.encode(event)
        #expect(payload.readableBytes < FrameDecoder.defaultMaximumFrameSize / 2)
        #expect(try FrameEncoder.frame(payload).readableBytes == payload.readableBytes + 4)
    }

    @Test("a full page of typical tasks fits in a frame")
    func fullPageFits() throws {
        let page = TaskPage(tasks: Array(repeating: Fixtures.task, count: TaskPage.maximumCount), nextAfterTaskIdentifier: 500)
        let payload = try coder.encode(DaemonMessage.reply(id: 1, .tasks(page)))
        #expect(payload.readableBytes < FrameDecoder.defaultMaximumFrameSize / 2)
    }

    @Test("fields this build does not know are ignored")
    func unknownFieldsIgnored() throws {
        let hello = try coder.decode(ClientMessage.self, from: Fixtures.buffer(
            #"{"type":"hello","protocolVersion":1,"clientName":"x","pid":1,"compression":{"kinds":["zstd"]},"z":null}"#))
        #expect(hello == .hello(Hello(protocolVersion: 1, clientName: "x", pid: 1)))

        let reply = try coder.decode(DaemonMessage.self, from: Fixtures.buffer(
            #"{"type":"reply","requestID":2,"traceID":"abc","reply":{"type":"taskIdentifier","taskIdentifier":9,"reserved":true}}"#))
        #expect(reply == .reply(id: 2, .taskIdentifier(9)))
    }

    @Test("an unknown type is refused with a clear error naming it", arguments: [
        (#"{"type":"teleport","requestID":1}"#, "message type \"teleport\""),
        (#"{"type":"request","requestID":1,"request":{"type":"frobnicate","sessionIdentifier":"s"}}"#, "request type \"frobnicate\""),
    ])
    func unknownClientType(_ json: String, _ named: String) {
        let error = #expect(throws: FerryProtocolError.self) { try coder.decode(ClientMessage.self, from: Fixtures.buffer(json)) }
        #expect(error?.code == .unknownMessageType)
        #expect(error?.message.contains(named) == true)
    }

    @Test("an unknown event or reply type from a newer daemon is refused, not guessed")
    func unknownDaemonType() {
        for json in [
            #"{"type":"event","sequence":1,"sessionIdentifier":"s","kind":{"type":"metrics"}}"#,
            #"{"type":"reply","requestID":1,"reply":{"type":"statistics"}}"#,
        ] {
            let error = #expect(throws: FerryProtocolError.self) { try coder.decode(DaemonMessage.self, from: Fixtures.buffer(json)) }
            #expect(error?.code == .unknownMessageType)
        }
    }

    @Test("an error code this build does not know decodes as itself")
    func unknownErrorCode() throws {
        let message = try coder.decode(DaemonMessage.self, from: Fixtures.buffer(
            #"{"type":"failure","requestID":1,"error":{"code":"quotaExceeded","message":"disk full"}}"#))
        #expect(message == .failure(id: 1, FerryProtocolError(FerryProtocolError.Code(rawValue: "quotaExceeded"), "disk full")))
    }

    @Test("malformed payloads are refused with a reason, never a trap", arguments: [
        (#"{"type":"hello""#, "not valid JSON"),
        ("", "not valid JSON"),
        ("\u{0}\u{1}\u{2}", "not valid JSON"),
        ("null", "ClientMessage"),
        ("[]", "ClientMessage"),
        (#""hello""#, "ClientMessage"),
        (#"{"protocolVersion":1}"#, "missing field \"type\""),
        (#"{"type":7}"#, "type"),
        (#"{"type":"hello","protocolVersion":"one","clientName":"x","pid":1}"#, "protocolVersion"),
        (#"{"type":"hello","protocolVersion":1,"clientName":"x"}"#, "missing field \"pid\""),
        (#"{"type":"hello","protocolVersion":1,"clientName":"x","pid":99999999999}"#, "ClientMessage"),
        (#"{"type":"request","requestID":-1,"request":{"type":"listSessions"}}"#, "ClientMessage"),
        (#"{"type":"request","requestID":1,"request":{"type":"submit","sessionIdentifier":"s","kind":"teleport","request":{"url":"http://x/","method":"GET","headers":[]},"priority":0.5}}"#, "kind"),
        (#"{"type":"request","requestID":1,"request":{"type":"submit","sessionIdentifier":"s","kind":"data","request":{"url":"http://x/","method":"GET","headers":[["a","b","c"]]},"priority":0.5}}"#, "headers"),
        (#"{"type":"request","requestID":1,"request":{"type":"submit","sessionIdentifier":"s","kind":"data","request":{"url":"http://x/","method":"GET","headers":[["a"]]},"priority":0.5}}"#, "headers"),
        (#"{"type":"request","requestID":1,"request":{"type":"submit","sessionIdentifier":"s","kind":"data","request":{"url":"http://x/","method":"GET","headers":[]},"priority":0.5,"resumeData":"%%%"}}"#, "resumeData"),
    ])
    func malformed(_ json: String, _ mentions: String) {
        let error = #expect(throws: FerryProtocolError.self) { try coder.decode(ClientMessage.self, from: Fixtures.buffer(json)) }
        #expect(error?.code == .malformedMessage)
        #expect(error?.message.contains(mentions) == true, "\(error?.message ?? "")")
    }

    @Test("deeply nested JSON is refused, not a stack overflow")
    func deepNesting() {
        let json = String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)
        let error = #expect(throws: FerryProtocolError.self) { try coder.decode(ClientMessage.self, from: Fixtures.buffer(json)) }
        #expect(error?.code == .malformedMessage)
        let nestedInField = #"{"type":"hello","protocolVersion":1,"clientName":"x","pid":1,"extra":"# + json + "}"
        #expect(throws: FerryProtocolError.self) { try coder.decode(ClientMessage.self, from: Fixtures.buffer(nestedInField)) }
    }
}
