import AsyncHTTPClient
import FerryCore
@testable import FerryEngine
import FerryTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOHTTP1
import Testing

/// The engine's own connections for plain `http` requests (PlainHTTPConnections): kept alive,
/// given up when they cannot be trusted, and read no faster than the body's reader.
@Suite("Plain HTTP connections")
struct PlainHTTPConnectionTests {
    @Test("requests one after another share one kept-alive connection, and each body is whole")
    func keptAlive() async throws {
        try await withServerAndEngine { server, engine in
            for seed in 1...20 {
                let result = try await engine.run(
                    Transfer(request: Request(url: url(server, "/bytes/20000?seed=\(seed)")), destination: .memory(limit: 1 << 20)))
                #expect(result.body.map(sha256Hex) == TestContent.sha256Hex(count: 20000, seed: UInt64(seed)))
            }
            #expect(server.totalConnections == 1)
            // Kept for the next request: the host has its idle list (the idle time-out test
            // sees it go with the connection).
            try await waitForIdleHosts(1, in: engine.plainConnections)
        }
    }

    @Test("a request that says Connection: close is not followed by another on its connection")
    func connectionClose() async throws {
        try await withServerAndEngine { server, engine in
            for _ in 1...2 {
                let result = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/100"), headers: ["Connection": "close"])))
                #expect(result.response.statusCode == 200)
            }
            #expect(server.totalConnections == 2)
            try await poll(until: "the server saw both connections close", observed: "\(server.currentConnections) open") {
                server.currentConnections == 0
            }
        }
    }

    @Test("a connection idle for connectionIdleTimeout is closed (its host forgotten), and the next request opens another")
    func idleTimeout() async throws {
        try await withServerAndEngine(configure: { $0.connectionIdleTimeout = 0.3 }) { server, engine in
            _ = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/100"))))
            try await poll(until: "the idle connection closed", observed: "\(server.currentConnections) open") {
                server.currentConnections == 0
            }
            try await waitForIdleHosts(0, in: engine.plainConnections)
            _ = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/100"))))
            #expect(server.totalConnections == 2)
        }
    }

    @Test("a kept-alive connection closed without an answer: the request goes again on a new one")
    func closedBeforeAnswer() async throws {
        try await withServerAndEngine { server, engine in
            _ = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/100"))))
            let result = try await engine.run(Transfer(request: Request(url: url(server, "/flaky/stale?failures=1&status=close"))))
            #expect(result.response.statusCode == 200)
            #expect(result.requestCount == 2)
            #expect(server.totalConnections == 2)
        }
    }

    @Test("while the reader holds back, the connection stops reading and the server stops sending")
    func readsNoFasterThanTheReader() async throws {
        let size = 256 << 20
        try await withServerAndEngine { server, engine in
            let observer = HeldReader()
            let run = Task {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/\(size)")), destination: .stream), observer: observer)
            }
            // Generous: under the parallel test round the first chunk once took longer than 10 s.
            try await poll(until: "the first chunk reached the reader", timeout: .seconds(30)) { observer.received > 0 }
            // The server fills the socket buffers and then waits: the count stays the same
            // from one look to the next, half a second apart.
            var sent = -1
            try await poll(until: "the server stopped sending", timeout: .seconds(20), every: .milliseconds(500), observed: "\(server.bytesBodySent) bytes sent") {
                defer { sent = server.bytesBodySent }
                return server.bytesBodySent == sent
            }
            #expect(server.bytesBodySent < 32 << 20, "bounded by the socket buffers and the exchange's \(PlainExchange.pauseAbove) bytes")
            observer.release()
            let result = try await run.value
            #expect(result.bytesReceived == Int64(size))
            #expect(observer.received == size)
        }
    }

    @Test("a response dropped before its end closes its connection; the next request opens another")
    func droppedResponse() async throws {
        try await withServerAndEngine { server, engine in
            let observer = RecordingObserver()
            observer.refusesResponses = true
            _ = await expectFerryError(.cancelledByDelegate) {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/\(8 << 20)")), destination: .stream), observer: observer)
            }
            try await poll(until: "the connection closed", observed: "\(server.currentConnections) open") { server.currentConnections == 0 }
            _ = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/100"))))
            #expect(server.totalConnections == 2)
        }
    }

    @Test("cancelling a transfer in its body closes the connection")
    func cancelledInBody() async throws {
        try await withServerAndEngine { server, engine in
            let observer = RecordingObserver()
            let run = Task {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/1000000?drip=50000")), destination: .stream), observer: observer)
            }
            try await poll(until: "the body began") { observer.events.contains("response 200") }
            run.cancel()
            let outcome = await run.result
            #expect((outcome.failure as? FerryError)?.code == .cancelled)
            try await poll(until: "the connection closed", observed: "\(server.currentConnections) open") { server.currentConnections == 0 }
        }
    }

    @Test("cancelling while the connection is being opened ends the transfer at once, not at the connect time-out")
    func cancelledWhileConnecting() async throws {
        // A listener that never accepts, its queue filled: the kernel drops further SYNs, so a
        // connect hangs until its time-out (here a minute, from the idle time-out).
        let listener = try StalledListener()
        defer { listener.close() }
        let engine = try TransferEngine(configuration: EngineConfiguration())
        let target = URL(string: "http://127.0.0.1:\(listener.port)/x")!
        let run = Task {
            try await engine.run(Transfer(request: Request(url: target)))
        }
        try await Task.sleep(for: .milliseconds(300))
        let cancelled = ContinuousClock.now
        run.cancel()
        let outcome = await run.result
        #expect((outcome.failure as? FerryError)?.code == .cancelled)
        #expect(ContinuousClock.now - cancelled < .seconds(10), "ended at the cancellation (the connect time-out is 60 s)")
        try await engine.shutdown()
    }

    @Test("the engine's shutdown ends a transfer that is still reading")
    func shutdownEndsRunning() async throws {
        let server = try await TestHTTPServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = try TransferEngine(configuration: EngineConfiguration())
        let observer = RecordingObserver()
        let run = Task {
            try await engine.run(Transfer(request: Request(url: url(server, "/bytes/1000000?drip=20000")), destination: .stream), observer: observer)
        }
        try await poll(until: "the body began") { observer.events.contains("response 200") }
        try await engine.shutdown()
        let outcome = await run.result
        #expect(outcome.failure is FerryError, "the transfer failed instead of reading on")
        try await poll(until: "the connection closed", observed: "\(server.currentConnections) open") { server.currentConnections == 0 }
    }

    @Test("a request's own framing headers are not sent without a body; a POST without one goes with Content-Length: 0")
    func framing() async throws {
        try await withServerAndEngine { server, engine in
            _ = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/10"), headers: ["Content-Length": "10", "Transfer-Encoding": "chunked"])))
            let get = try #require(server.requests.last)
            #expect(get.header("Content-Length") == nil && get.header("Transfer-Encoding") == nil)
            _ = try await engine.run(Transfer(request: Request(url: url(server, "/upload"), method: "POST")))
            #expect(server.requests.last?.header("Content-Length") == "0")
        }
    }

    @Test("which requests go over plain connections, and the request line and Host they get")
    func plainRequests() throws {
        func plain(_ text: String, method: HTTPMethod = .GET, body: Bool = false, proxied: Bool = false) -> PlainRequest? {
            var request = HTTPClientRequest(url: text)
            request.method = method
            if body { request.body = .bytes(Data("x".utf8)) }
            return PlainRequest(request, proxied: proxied)
        }
        let bare = try #require(plain("http://127.0.0.1:8080"))
        #expect(bare.origin == .init(host: "127.0.0.1", port: 8080))
        #expect(bare.head.uri == "/" && bare.head.headers["Host"] == ["127.0.0.1:8080"])
        let v6 = try #require(plain("http://[::1]:81/a%20b?x=1#part"))
        #expect(v6.origin == .init(host: "::1", port: 81))
        #expect(v6.head.uri == "/a%20b?x=1" && v6.head.headers["Host"] == ["[::1]:81"])
        let query = try #require(plain("HTTP://example.test?q"))
        #expect(query.origin == .init(host: "example.test", port: 80) && query.head.uri == "/?q")
        #expect(try #require(plain("http://h/x", method: .HEAD)).head.method == .HEAD)
        #expect(plain("https://h/") == nil, "TLS goes through AsyncHTTPClient")
        #expect(plain("http://") == nil && plain("http:/h") == nil && plain("httpx://h/") == nil && plain("http:\u{1A}/h/") == nil)
        #expect(try #require(plain("hTtP://h/a#b?c")).head.uri == "/a", "the fragment is not sent")
        #expect(plain("http://user:pw@h/") == nil, "credentials in the URL")
        #expect(plain("http://h/", method: .PUT, body: true) == nil, "a body")
        #expect(plain("http://h/", proxied: true) == nil, "a proxy")
        #expect(plain("http://h:0/") == nil && plain("http://h:99999/") == nil && plain("http://[::1/") == nil)
        #expect(plain("http://%65xample.test/") == nil, "percent-encoding in the authority")
        #expect(plain("http://h/", method: .POST) == nil && plain("http://h/", method: .PUT) == nil && plain("http://h/", method: .PATCH) == nil,
                "methods whose empty body is framed")
        #expect(try #require(plain("http://Example.TEST:81/")).origin == .init(host: "example.test", port: 81))
        #expect(try #require(plain("http://Example.TEST/")).head.headers["Host"] == ["Example.TEST"], "Host as written")
    }
}

/// A TCP listener on 127.0.0.1 that never accepts, its queue filled by connections of its own,
/// so that the kernel drops further SYNs and a connect to it waits.
private final class StalledListener {
    let port: Int
    private var descriptors: [Int32] = []

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        descriptors.append(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 0) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the accept queue (a backlog of 0 holds one; a few more for good measure), each
        // connect non-blocking so that the ones the kernel drops do not wait here.
        for _ in 0..<4 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            descriptors.append(client)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        usleep(100_000)
    }

    func close() {
        for fd in descriptors { Glibc.close(fd) }
        descriptors = []
    }
}

/// Takes the first chunk, then holds every later one back until released.
private final class HeldReader: TransferObserver, Sendable {
    private let state = NIOLockedValueBox((received: 0, released: false))
    private let gate = AsyncStream<Void>.makeStream()

    var received: Int { state.withLockedValue { $0.received } }

    func release() {
        state.withLockedValue { $0.released = true }
        gate.continuation.finish()
    }

    func transferDidReceive(data: Data) async {
        let released = state.withLockedValue { state in
            state.received += data.count
            return state.released
        }
        if !released { for await _ in gate.stream {} }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// Waits (5 s at most) until `count` hosts have idle connections in `pool`.
private func waitForIdleHosts(_ count: Int, in pool: PlainHTTPConnections) async throws {
    try await poll(until: "\(count) hosts with idle connections", timeout: .seconds(5), observed: "\(pool.idleOrigins)") {
        pool.idleOrigins == count
    }
}
