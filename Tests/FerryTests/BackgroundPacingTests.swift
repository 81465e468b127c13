@testable import Ferry
import FerryTestSupport
import Foundation
import Testing

/// A background session whose delegate is slower than its events holds a bounded number of
/// ferryd's messages; the rest waits in ferryd (``DeliveryPacing``, docs/protocol.md "Pacing").
@Suite("A slow delegate and ferryd's pace", .serialized, .timeLimit(.minutes(3)))
struct BackgroundPacingTests {
    @Test("a delegate stuck in its first callback holds the app to its window of ferryd's messages; released, it gets every completion once")
    func stuckDelegateIsBounded() async throws {
        try await withDaemonAndServer { daemon, server in
            let delegate = StuckDelegate()
            let session = try Session.background(daemon.configuration("bg.paced"), delegate: delegate)
            let count = 400
            for seed in 1...count { session.downloadTask(with: server.url("/bytes/64?seed=\(seed)")).resume() }
            try await poll(until: "ferryd to complete all \(count) downloads", timeout: .seconds(90), every: .milliseconds(500)) {
                let listed = try await runFerry(["list", "--json", "--session", "bg.paced"], environment: daemon.environment)
                let completed = listed.output.components(separatedBy: "\"completed\"").count - 1
                return completed >= count
            }
            #expect(delegate.completions.isEmpty, "the delegate is still in its first callback")
            let link = try #require(session.background)
            // ferryd has 1,200 events ready (three per download); the app has what its window lets through.
            let held = link.heldMessages
            #expect(held.onDelegate <= DeliveryPacing.inFlightLimit, "\(held)")
            #expect(held.received - held.taken <= DeliveryPacing.window, "\(held)")
            #expect(held.received <= DeliveryPacing.window + DeliveryPacing.inFlightLimit + DeliveryPacing.reportEvery, "\(held)")
            #expect(held.received > 0, "\(held)")

            delegate.release()
            try await poll(until: "the delegate to hear of all \(count) completions", timeout: .seconds(90), every: .milliseconds(100)) {
                delegate.completions.count >= count
            }
            let completions = delegate.completions
            #expect(completions.count == count && Set(completions).count == count, "each task once: \(completions.count) calls")
            #expect(delegate.failures == 0)
            session.finishTasksAndInvalidate()
        }
    }
}

/// Waits in its first `didFinishDownloadingTo` until released; counts completions.
final class StuckDelegate: SessionDelegate, @unchecked Sendable {  // state behind the lock
    private let lock = NSLock()
    private var gate: CheckedContinuation<Void, Never>?
    private var released = false
    private var finished: [Int] = []
    private var failed = 0

    var completions: [Int] { lock.withLock { finished } }
    var failures: Int { lock.withLock { failed } }

    func release() {
        let waiting = lock.withLock {
            released = true
            defer { gate = nil }
            return gate
        }
        waiting?.resume()
    }

    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = lock.withLock {
                if released { return true }
                gate = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        lock.withLock {
            finished.append(task.taskIdentifier)
            if error != nil { failed += 1 }
        }
    }
}
