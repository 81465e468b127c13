import Ferry
import FerryTestSupport
import Foundation
import Testing

/// A background session's retry policy travels with each task to ferryd, which applies the
/// one rulebook with it (docs/retries.md).
extension BackgroundSessionTests {
    @Test("the configuration's retry policy reaches ferryd: two attempts at a 503, then the 503 is the answer")
    func retryPolicyReachesFerryd() async throws {
        try await withDaemonAndServer { daemon, server in
            var configuration = daemon.configuration("bg.retry.policy")
            configuration.retryPolicy = RetryPolicy(maximumAttempts: 2, initialDelay: .milliseconds(100), maximumDelay: .milliseconds(100))
            let delegate = RecordingDelegate()
            let session = try Session.background(configuration, delegate: delegate)
            // A POST: 503 means the server did not act on it, so the rulebook sends it again.
            let task = session.dataTask(with: Request(url: server.url("/status/503"), method: "POST"))
            task.resume()
            #expect(succeeded(await delegate.nextCompletion()), "the 503 is delivered as the response, not a failure")
            #expect(task.response?.statusCode == 503)
            #expect(server.requests.filter { $0.path.hasPrefix("/status/503") }.count == 2, "exactly maximumAttempts requests")
            session.finishTasksAndInvalidate()
        }
    }
}
