@testable import Ferry
import FerryTestSupport
import FerryProtocol
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

    @Test("a delegate stuck in its first data callback holds the app to the byte windows of data tasks' bodies; released, it gets every byte")
    func stuckDelegateIsBoundedInBytes() async throws {
        try await withDaemonAndServer { daemon, server in
            let delegate = StuckDelegate()
            let session = try Session.background(daemon.configuration("bg.paced.bytes"), delegate: delegate)
            let (count, size) = (16, 1 << 20)
            for seed in 1...count { session.dataTask(with: server.url("/bytes/\(size)?seed=\(seed)")).resume() }
            try await poll(until: "ferryd to complete all \(count) data tasks", timeout: .seconds(90), every: .milliseconds(500)) {
                let listed = try await runFerry(["list", "--json", "--session", "bg.paced.bytes"], environment: daemon.environment)
                return listed.output.components(separatedBy: "\"completed\"").count - 1 >= count
            }
            #expect(delegate.completions.isEmpty && delegate.bodyBytes == 0, "the delegate is still in its first data callback")
            let link = try #require(session.background)
            // Give ferryd's pushes time to arrive: what the app holds is what pacing let through.
            try await Task.sleep(for: .milliseconds(500))
            // ferryd has 16 MiB of bodies ready; the app holds what the two byte windows let through.
            let held = link.heldBodyBytes
            let chunk = EventKind.maximumDataSize
            #expect(held.onDelegate <= DeliveryPacing.inFlightByteLimit + chunk, "\(held)")
            #expect(held.received - held.taken <= DeliveryPacing.byteWindow + chunk, "\(held)")
            #expect(held.received <= DeliveryPacing.byteWindow + DeliveryPacing.inFlightByteLimit + DeliveryPacing.reportEveryBytes + 2 * chunk, "\(held)")
            #expect(held.received > 0, "\(held)")

            delegate.release()
            try await poll(until: "the delegate to hear of all \(count) completions", timeout: .seconds(90), every: .milliseconds(100)) {
                delegate.completions.count >= count
            }
            #expect(delegate.bodyBytes == count * size, "every body byte once")
            #expect(Set(delegate.completions).count == count && delegate.failures == 0)
            session.finishTasksAndInvalidate()
        }
    }
}

/// Waits in its first `didFinishDownloadingTo` or `didReceive data` until released; counts
/// completions and body bytes.
final class StuckDelegate: SessionDelegate, @unchecked Sendable {  // state behind the lock
    private let lock = NSLock()
    private var gate: CheckedContinuation<Void, Never>?
    private var released = false
    private var finished: [Int] = []
    private var failed = 0
    private var received = 0

    var completions: [Int] { lock.withLock { finished } }
    var failures: Int { lock.withLock { failed } }
    var bodyBytes: Int { lock.withLock { received } }

    func release() {
        let waiting = lock.withLock {
            released = true
            defer { gate = nil }
            return gate
        }
        waiting?.resume()
    }

    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        await waitUntilReleased()
    }

    func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {
        await waitUntilReleased()
        lock.withLock { received += data.count }
    }

    private func waitUntilReleased() async {
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
