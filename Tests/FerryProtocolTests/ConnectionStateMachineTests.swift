import FerryProtocol
import Testing

@Suite("The daemon's connection rules, without a socket")
struct ConnectionStateMachineTests {
    let hello = Hello(clientName: "ferry-cli", pid: 9)

    @Test("hello, welcome, then requests are handed over with their ids")
    func happyPath() {
        var connection = ConnectionStateMachine(daemonVersion: "0.1.0")
        #expect(connection.peer == nil)
        #expect(connection.received(.hello(hello)) == .reply(.welcome(Welcome(protocolVersion: ProtocolVersion.current, daemonVersion: "0.1.0"))))
        #expect(connection.peer?.hello == hello)
        #expect(connection.received(.request(id: 5, .listSessions)) == .handle(id: 5, .listSessions))
        #expect(connection.received(.request(id: 6, .listSessions)) == .handle(id: 6, .listSessions))
        #expect(!connection.isClosed)
    }

    @Test("a busy daemon answers the hello with its refusal, after reading it, and closes")
    func refusingBusy() {
        let busy = FerryProtocolError(.busy, "ferryd holds 256 connections, its limit: try again shortly")
        var connection = ConnectionStateMachine(daemonVersion: "0.1.0", refusing: busy)
        #expect(connection.received(.hello(hello)) == .close(.refused(busy)))
        #expect(connection.isClosed)
        #expect(connection.peer == nil)
    }

    @Test("a request before hello is refused and closes the connection")
    func requestFirst() {
        var connection = ConnectionStateMachine(daemonVersion: "0.1.0")
        guard case .close(.refused(let error)) = connection.received(.request(id: 1, .listSessions)) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(error.code == .handshakeRequired)
        #expect(error.message.contains("request"))
        #expect(connection.isClosed)
        #expect(connection.received(.hello(hello)) == .ignore)
    }

    @Test("an unknown version is refused and closes the connection")
    func unknownVersion() {
        var connection = ConnectionStateMachine(daemonVersion: "0.1.0")
        let action = connection.received(.hello(Hello(protocolVersion: 9, clientName: "future", pid: 1)))
        guard case .close(.refused(let error)) = action else {
            Issue.record("expected a refusal, got \(action)")
            return
        }
        #expect(error.code == .unsupportedVersion)
        #expect(connection.isClosed)
    }

    @Test("a second hello ends the connection with a goodbye")
    func secondHello() {
        var connection = ConnectionStateMachine(daemonVersion: "0.1.0")
        _ = connection.received(.hello(hello))
        guard case .close(.goodbye(let error)) = connection.received(.hello(hello)) else {
            Issue.record("expected goodbye")
            return
        }
        #expect(error.code == .handshakeRequired)
        #expect(connection.received(.request(id: 1, .listSessions)) == .ignore)
    }

    @Test("a bad frame ends the connection: refused before the handshake, goodbye after, then nothing")
    func badFrame() {
        let tooLarge = FerryProtocolError(.frameTooLarge, "too large")
        var early = ConnectionStateMachine(daemonVersion: "0.1.0")
        #expect(early.failed(tooLarge) == .close(.refused(tooLarge)))
        #expect(early.failed(tooLarge) == .ignore)

        var late = ConnectionStateMachine(daemonVersion: "0.1.0")
        _ = late.received(.hello(hello))
        #expect(late.failed(tooLarge) == .close(.goodbye(tooLarge)))
        #expect(late.received(.request(id: 1, .listSessions)) == .ignore)
    }
}
