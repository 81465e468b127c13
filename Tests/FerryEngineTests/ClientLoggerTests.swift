import FerryCore
import FerryEngine
import FerryTestSupport
import Foundation
import Logging
import Synchronization
import Testing

/// What AsyncHTTPClient gets to log through: the engine's logger when it shows debug
/// messages, and nothing otherwise (AsyncHTTPClient sets metadata on its logger for every
/// request, which a stream handler formats each time, for messages nobody would see).
@Suite("The HTTP client's logging")
struct ClientLoggerTests {
    /// Counts what reaches it: messages, and AsyncHTTPClient's metadata (its keys start with
    /// `ahc`) set on it.
    struct CountingHandler: LogHandler {
        let counts: Counts
        var logLevel: Logger.Level
        var metadata: Logger.Metadata = [:]

        init(level: Logger.Level, counts: Counts) {
            self.logLevel = level
            self.counts = counts
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set {
                if key.hasPrefix("ahc") { counts.value.withLock { $0.metadataSets += 1 } }
                metadata[key] = newValue
            }
        }

        func log(event: LogEvent) {
            counts.value.withLock { $0.messages += 1 }
        }
    }

    final class Counts: Sendable {
        let value = Mutex((messages: 0, metadataSets: 0))
    }

    /// Runs three small uploads through an engine whose logger shows `level`; what reached it.
    /// (Uploads: requests with a body go through AsyncHTTPClient, plain `http` GETs do not.)
    func uploads(loggingAt level: Logger.Level) async throws -> (messages: Int, metadataSets: Int) {
        let counts = Counts()
        let logger = Logger(label: "test.engine") { _ in CountingHandler(level: level, counts: counts) }
        let server = try await TestHTTPServer.start()
        let engine = try TransferEngine(configuration: EngineConfiguration(), logger: logger)
        do {
            for seed in 1...3 {
                let result = try await engine.run(Transfer(request: Request(
                    url: URL(string: server.baseURL + "/upload")!, method: "PUT", body: Data(repeating: UInt8(seed), count: 1000))))
                #expect(result.response.statusCode == 200)
            }
            try await engine.shutdown()
            try await server.shutdown()
        } catch {
            try? await engine.shutdown()
            try? await server.shutdown()
            throw error
        }
        return counts.value.withLock { $0 }
    }

    @Test("at notice, no request sets metadata on the engine's logger or logs through it")
    func quietAtNotice() async throws {
        let seen = try await uploads(loggingAt: .notice)
        #expect(seen.messages == 0)
        #expect(seen.metadataSets == 0)
    }

    @Test("at trace, AsyncHTTPClient's own messages reach the engine's logger")
    func clientMessagesAtTrace() async throws {
        let seen = try await uploads(loggingAt: .trace)
        #expect(seen.messages > 0, "AsyncHTTPClient logs each request at trace")
        #expect(seen.metadataSets > 0, "and tags its messages with the request's identifier (ahc-request-id)")
    }
}
