import FerryCore
import FerryEngine
import FerryTestSupport
import Foundation
import Testing

/// The in-process engine follows the one retry rulebook (FerryCoreTests has the table): the
/// rows where it differs from "idempotent only" are checked here against a real server.
@Suite("Retry rulebook in the engine")
struct RulebookInEngineTests {
    let policy = RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(50), maximumDelay: .milliseconds(50))

    @Test("a POST answered 503 with Retry-After is sent again: the server did not act on it")
    func postAfter503() async throws {
        try await withServerAndEngine { server, engine in
            let payload = Data(TestContent.bytes(count: 10_000, seed: 4))
            let target = url(server, "/flaky/post503?failures=1&status=503&retryAfter=0&then=/upload/p")
            let result = try await engine.run(Transfer(request: Request(url: target, method: "POST"), upload: .data(payload), retry: policy))
            #expect(result.response.statusCode == 200)
            #expect(server.requests.filter { $0.path.hasPrefix("/flaky/post503") }.count == 2)
        }
    }

    @Test("a POST answered 503 from a stream is not sent again: the 503 is the answer")
    func streamAfter503() async throws {
        try await withServerAndEngine { server, engine in
            let payload = Data(TestContent.bytes(count: 10_000, seed: 5))
            let target = url(server, "/flaky/stream503?failures=1&status=503&retryAfter=0&then=/upload/p")
            let body = UploadBody.stream(length: Int64(payload.count)) {
                AsyncThrowingStream { continuation in
                    continuation.yield(Array(payload))
                    continuation.finish()
                }
            }
            let result = try await engine.run(Transfer(request: Request(url: target, method: "POST"), upload: body, retry: policy))
            #expect(result.response.statusCode == 503)
            #expect(server.requests.filter { $0.path.hasPrefix("/flaky/stream503") }.count == 1)
        }
    }
}
