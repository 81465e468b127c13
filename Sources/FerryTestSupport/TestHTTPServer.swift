// A scriptable, misbehaving HTTP/1.1 server on loopback for tests and benchmarks.
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A scriptable HTTP/1.1 server on `127.0.0.1`, port chosen by the system.
///
/// Each route misbehaves on request: drop the connection at byte N, stall, drip, answer 503
/// with `Retry-After`, redirect in a loop, lie about `Content-Length`, and so on. It records
/// every request and counts connections. See `TestHTTPServer+Routes.swift` for the routes.
///
/// ```swift
/// let server = try await TestHTTPServer.start()
/// defer { Task { try? await server.shutdown() } }
/// let url = server.baseURL + "/bytes/1000000?seed=3&dropAfter=500000"
/// // … run the client against `url` …
/// #expect(server.requests.count == 2)
/// #expect(server.requests[1].header("range") == "bytes=500000-")
/// try await server.shutdown()
/// ```
public final class TestHTTPServer: Sendable {
    struct State {
        var requests: [RecordedRequest] = []
        var flaky: [String: Int] = [:]
        /// `/cache/<name>`: full answers sent, and `304`s, per name.
        var cacheAnswers: [String: Int] = [:]
        var cacheNotModified: [String: Int] = [:]
        /// Digest nonces this server issued (`/digest-auth`).
        var digestNonces: Set<String> = []
        var versions: [String: UInt64] = [:]
        var digests: [String: [UInt8]] = [:]
        /// `/gate/<name>`: the requests waiting at each gate.
        var gates: [String: [CheckedContinuation<Void, Never>]] = [:]
        var nextID = 0
        /// `/bytes` body bytes handed to the socket, all requests together.
        var bytesBodySent = 0
    }

    typealias Connection = LoopbackHTTPListener.Connection

    let state = Mutex(State())
    private let listener: LoopbackHTTPListener

    /// The TCP port the server listens on.
    public let port: Int

    /// `http://127.0.0.1:PORT`, with no trailing slash.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    private init(listener: LoopbackHTTPListener) {
        self.listener = listener
        self.port = listener.port
    }

    /// Starts a server on `127.0.0.1`; `port` 0 lets the system choose.
    ///
    /// ```swift
    /// let server = try await TestHTTPServer.start()
    /// print(server.baseURL) // http://127.0.0.1:40123
    /// ```
    public static func start(port: Int = 0) async throws -> TestHTTPServer {
        let server = TestHTTPServer(listener: try await LoopbackHTTPListener.bind(port: port))
        server.listener.startAccepting { connection, number in try await server.serve(connection, number: number) }
        return server
    }

    /// Stops listening, closes every open connection and waits for their handlers to end.
    public func shutdown() async throws {
        await listener.shutdown()
    }

    // MARK: Statistics

    /// The largest number of connections that were open at the same time.
    public var maxConcurrentConnections: Int { listener.counts.maxConcurrent }
    /// Connections accepted since start or the last `resetStatistics()`.
    public var totalConnections: Int { listener.counts.total }
    /// Connections open now.
    public var currentConnections: Int { listener.counts.current }
    /// `/bytes` body bytes written to the socket so far, all requests together: how far a
    /// server got while its client held reading back.
    public var bytesBodySent: Int { state.withLock { $0.bytesBodySent } }
    /// Every request received since start or the last `resetStatistics()`, in arrival order.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }

    /// Clears the request log and connection counts (open connections still count as current)
    /// and the `/flaky` and `dropOnce` counters (resource versions stay).
    public func resetStatistics() {
        state.withLock {
            $0.requests = []
            $0.flaky = [:]
        }
        listener.resetCounts()
    }

    /// Sets the version that `/bytes/<n>?versionKey=KEY` serves (0 until set), to change a
    /// resource between a download and its resume without changing the URL.
    ///
    /// ```swift
    /// let url = server.baseURL + "/bytes/100000?versionKey=doc&dropAfter=5000"
    /// // … first attempt drops at 5000 …
    /// server.setResourceVersion(2, key: "doc")   // the resume must restart with new content
    /// ```
    public func setResourceVersion(_ version: UInt64, key: String) {
        state.withLock { $0.versions[key] = version }
    }

    func resourceVersion(key: String) -> UInt64 {
        state.withLock { $0.versions[key] ?? 0 }
    }

    /// Counts a use of `key` and returns the count (1 for the first use).
    func countUse(_ key: String) -> Int {
        state.withLock {
            $0.flaky[key, default: 0] += 1
            return $0.flaky[key]!
        }
    }

    func record(_ request: RecordedRequest) -> Int {
        state.withLock {
            var request = request
            $0.nextID += 1
            request.id = $0.nextID
            $0.requests.append(request)
            return request.id
        }
    }

    func updateRecord(_ id: Int, bodyLength: Int, sha256: String) {
        state.withLock {
            // Search from the end: the record is recent, and may be gone after a reset.
            guard let i = $0.requests.lastIndex(where: { $0.id == id }) else { return }
            $0.requests[i].bodyLength = bodyLength
            $0.requests[i].bodySHA256 = sha256
        }
    }
}

/// A failure of a test server's own setup, with a message naming the remedy.
extension TestHTTPServer {
    /// How many full answers and `304`s `/cache/<name>` sent.
    public func cacheCounts(_ name: String) -> (full: Int, notModified: Int) {
        state.withLock { ($0.cacheAnswers[name] ?? 0, $0.cacheNotModified[name] ?? 0) }
    }
}

public struct TestServerError: Error, CustomStringConvertible {
    /// What went wrong and what to do.
    public var description: String
    init(_ description: String) { self.description = description }
}
