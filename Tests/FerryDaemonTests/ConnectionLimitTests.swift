import FerryDaemon
import FerryDaemonClient
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// What one client may take of ferryd: requests ahead of its answers, connections, silence
/// (docs/ferryd.md, "Limits"). Figures under load are in Benchmarks/ferryd-flood.sh.
@Suite("Connection limits")
struct ConnectionLimitTests {
    static func statusFrame(id: UInt64) throws -> [UInt8] {
        Array(try FrameEncoder.frame(try MessageCoder().encode(ClientMessage.request(id: id, .status))).readableBytesView)
    }

    @Test("a client that pipelines without reading is read no further: its writes block, others are served, and its answers still come")
    func pipeliningIsHeldBack() async throws {
        let daemon = try await InProcessDaemon { $0.maximumRequestsInFlight = 32 }
        let flooder = try await daemon.client("flooder")
        // Unbounded, ferryd took 822,000 of these in 8 s (and 240 MiB with them).
        let (frames, blocked) = try await flooder.sendWithoutReading(try Self.statusFrame(id: 7), limit: 400_000, blockedFor: 1)
        #expect(blocked, "ferryd kept reading: \(frames) requests taken without an answer read")
        #expect(frames < 400_000)
        let other = try await daemon.client("other")
        guard case .status = try await other.request(.status, timeout: 5) else { throw TestFailure("no status") }
        // Nothing was dropped: the flooder's answers are there to read, in order.
        for _ in 0..<50 {
            guard case .reply(7, .status) = try await flooder.next(timeout: 5) else { throw TestFailure("not a status reply") }
        }
        flooder.close()
        guard case .status = try await other.request(.status, timeout: 5) else { throw TestFailure("no status") }
        await daemon.shutdown()
    }

    @Test("a connection that says no hello is closed after the handshake time-out, with the reason")
    func noHello() async throws {
        let daemon = try await InProcessDaemon { $0.handshakeTimeout = 0.3 }
        let silent = try RawClient(socketPath: daemon.socketPath)
        let (closed, messages) = try await silent.waitForClose(timeout: 10)
        #expect(closed)
        guard case .refused(let error) = messages.first else { throw TestFailure("expected refused, got \(messages)") }
        #expect(error.code == .handshakeRequired)
        #expect(error.message.contains("no hello"))
        await daemon.shutdown()
    }

    @Test("a silent connection without a session is closed after the idle time-out; one holding a session stays open")
    func idleConnections() async throws {
        // 1 s: the owner and the watcher must attach within it of connecting, on a loaded machine too.
        let daemon = try await InProcessDaemon { $0.idleTimeout = 1 }
        let owner = try await daemon.client("owner")
        try await owner.request(.attach("kept"))
        let watcher = try await daemon.client("watcher")
        try await watcher.request(.attach("kept", owner: false))
        let idle = try await daemon.client("idle")
        let (closed, messages) = try await idle.waitForClose(timeout: 10)
        #expect(closed)
        guard case .goodbye(let error) = messages.last else { throw TestFailure("expected goodbye, got \(messages)") }
        #expect(error.code == .idleTimeout)
        try await Task.sleep(for: .seconds(2.2))  // more than twice the time-out
        for client in [owner, watcher] {
            guard case .status = try await client.request(.status, timeout: 5) else { throw TestFailure("no status") }
        }
        await daemon.shutdown()
    }

    @Test("past the connection limit a client is refused as busy; the client library tries again and gets in once one closes")
    func connectionLimit() async throws {
        let daemon = try await InProcessDaemon { $0.maximumConnections = 3 }
        var held = [try await daemon.client("1"), try await daemon.client("2"), try await daemon.client("3")]
        let fourth = try RawClient(socketPath: daemon.socketPath)
        try await fourth.send(.hello(Hello(clientName: "4", pid: getpid())))
        guard case .refused(let error) = try await fourth.next(timeout: 5) else { throw TestFailure("not refused") }
        #expect(error.code == .busy)

        var endpoint = DaemonEndpoint(socketPath: daemon.socketPath, daemonLogPath: "/dev/null", startsDaemon: false)
        endpoint.busyTimeout = .milliseconds(300)
        do {
            _ = try await DaemonConnection.open(endpoint, clientName: "impatient")
            Issue.record("a connection past the limit was let in")
        } catch {
            guard case .busy = error else { throw TestFailure("expected busy, got \(error)") }
        }

        endpoint.busyTimeout = .seconds(20)
        async let patient = DaemonConnection.open(endpoint, clientName: "patient")
        try await Task.sleep(for: .milliseconds(400))
        held.removeFirst().close()
        let connection = try await patient
        guard case .status = try await connection.send(.status) else { throw TestFailure("no status") }
        await connection.close()
        await daemon.shutdown()
    }
}
