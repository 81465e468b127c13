import FerryProtocol
import NIOCore
import NIOEmbedded
import Testing

@Suite("Version negotiation")
struct HandshakeTests {
    @Test("a client of the current version is welcomed with it")
    func sameVersion() throws {
        let answer = ProtocolVersion.answer(to: Hello(clientName: "t", pid: 1), daemonVersion: "0.1.0")
        #expect(answer == .welcome(Welcome(protocolVersion: ProtocolVersion.current, daemonVersion: "0.1.0")))
        #expect(try ProtocolVersion.accept(answer).protocolVersion == ProtocolVersion.current)
    }

    @Test("the highest version both speak is chosen", arguments: [
        (3, 1, 1...2, 2), (2, 2, 1...4, 2), (5, 3, 1...3, 3), (1, nil, 1...1, 1),
    ] as [(Int, Int?, ClosedRange<Int>, Int)])
    func highestCommon(_ clientMax: Int, _ clientMin: Int?, _ daemon: ClosedRange<Int>, _ expected: Int) {
        let hello = Hello(protocolVersion: clientMax, minimumProtocolVersion: clientMin, clientName: "t", pid: 1)
        #expect(ProtocolVersion.answer(to: hello, daemonVersion: "x", supported: daemon)
            == .welcome(Welcome(protocolVersion: expected, daemonVersion: "x")))
    }

    @Test("versions the daemon does not know are refused with a clear error", arguments: [
        (2, nil, 1...1), (0, nil, 1...1), (-5, nil, 1...1), (9, 7, 1...6), (1, nil, 2...3),
    ] as [(Int, Int?, ClosedRange<Int>)])
    func refused(_ clientMax: Int, _ clientMin: Int?, _ daemon: ClosedRange<Int>) {
        let hello = Hello(protocolVersion: clientMax, minimumProtocolVersion: clientMin, clientName: "t", pid: 1)
        let answer = ProtocolVersion.answer(to: hello, daemonVersion: "x", supported: daemon)
        guard case .refused(let error) = answer else {
            Issue.record("expected a refusal, got \(answer)")
            return
        }
        #expect(error.code == .unsupportedVersion)
        #expect(error.message.contains("ferryd speaks \(daemon.lowerBound)"))
        #expect(error.message.contains("install matching versions"))
        #expect(throws: error) { try ProtocolVersion.accept(answer) }
    }

    @Test("a client refuses a welcome for a version it does not speak, and anything but welcome or refused")
    func clientChecks() {
        let tooNew = DaemonMessage.welcome(Welcome(protocolVersion: 7, daemonVersion: "9.0"))
        let error = #expect(throws: FerryProtocolError.self) { try ProtocolVersion.accept(tooNew) }
        #expect(error?.code == .unsupportedVersion)
        let early = DaemonMessage.eventsFinished(sessionIdentifier: "s")
        let wrong = #expect(throws: FerryProtocolError.self) { try ProtocolVersion.accept(early) }
        #expect(wrong?.code == .handshakeRequired)
        #expect(wrong?.message.contains("eventsFinished") == true)
    }

    @Test("the whole exchange through framed pipelines: hello, welcome, a request and its reply")
    func exchange() throws {
        let coder = MessageCoder()
        let daemon = EmbeddedChannel()
        let client = EmbeddedChannel()
        for channel in [daemon, client] {
            try channel.pipeline.syncOperations.addHandlers(
                ByteToMessageHandler(FrameDecoder()), MessageToByteHandler(FrameEncoder()))
        }
        func carry(from: EmbeddedChannel, to: EmbeddedChannel) throws {
            for _ in 0..<100 {
                guard let bytes = try from.readOutbound(as: ByteBuffer.self) else { return }
                try to.writeInbound(bytes)
            }
        }

        try client.writeOutbound(try coder.encode(ClientMessage.hello(Hello(clientName: "ferry-cli", pid: 42))))
        try carry(from: client, to: daemon)
        let first = try coder.decode(ClientMessage.self, from: try #require(try daemon.readInbound(as: ByteBuffer.self)))
        guard case .hello(let hello) = first else {
            Issue.record("expected hello, got \(first)")
            return
        }
        try daemon.writeOutbound(try coder.encode(ProtocolVersion.answer(to: hello, daemonVersion: "0.1.0")))
        try carry(from: daemon, to: client)
        let welcome = try ProtocolVersion.accept(
            try coder.decode(DaemonMessage.self, from: try #require(try client.readInbound(as: ByteBuffer.self))))
        #expect(welcome.daemonVersion == "0.1.0")

        try client.writeOutbound(try coder.encode(ClientMessage.request(id: 1, .listSessions)))
        try carry(from: client, to: daemon)
        let request = try coder.decode(ClientMessage.self, from: try #require(try daemon.readInbound(as: ByteBuffer.self)))
        #expect(request == .request(id: 1, .listSessions))
        try daemon.writeOutbound(try coder.encode(DaemonMessage.reply(id: 1, .sessions([]))))
        try carry(from: daemon, to: client)
        let reply = try coder.decode(DaemonMessage.self, from: try #require(try client.readInbound(as: ByteBuffer.self)))
        #expect(reply == .reply(id: 1, .sessions([])))
        #expect(try daemon.finish().isClean)
        #expect(try client.finish().isClean)
    }
}
