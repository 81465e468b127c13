// The time from ferryd storing a background task's outcome to the app's delegate hearing of
// it (`urlSession(_:task:didCompleteWithError:)`), for COUNT download tasks that each wait a
// second at the server, so that they end while the app is still handing over the later ones:
// issue 15, item 6. Run by Benchmarks/event-latency.sh, which starts
// ferryd and the test server; written in URLSession's spelling, as an app would be.
//
//   event-latency TEST_SERVER_URL [COUNT] [together]
//
// With `together`, every task waits at the test server's gate until the last one has arrived,
// so that all COUNT end at one moment: a burst, from ferryd's store to the delegate.
//
// A background task's metrics end when ferryd stored its outcome (docs/porting.md), so the
// delegate's `Date()` minus `taskInterval.end` is the news's way to the app: ferryd's
// delivery, the socket, the library, the delegate queue.
import Ferry
import Foundation
import Synchronization

final class Latencies: NSObject, @unchecked Sendable {  // state behind `lock`
    private let lock = NSLock()
    private var ends: [URLSessionTask: Date] = [:]
    private var _latencies: [TimeInterval] = []
    private var _failures = 0
    let finished = AsyncStream<Void>.makeStream()

    var latencies: [TimeInterval] { lock.withLock { _latencies } }
    var failures: Int { lock.withLock { _failures } }
}

extension Latencies: URLSessionDownloadDelegate {
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {}

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        lock.withLock { ends[task] = metrics.taskInterval.end }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let now = Date()
        lock.withLock {
            if let end = ends.removeValue(forKey: task) { _latencies.append(now.timeIntervalSince(end)) }
            if error != nil { _failures += 1 }
        }
        finished.continuation.yield()
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2, let server = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: event-latency TEST_SERVER_URL [COUNT]\n".utf8))
    exit(2)
}
let count = arguments.count > 2 ? Int(arguments[2]) ?? 1000 : 1000
let together = arguments.count > 3 && arguments[3] == "together"
let perSession = 64  // the per-host limit's most: every task runs at once
let delegate = Latencies()
var sessions: [URLSession] = []
for index in 0..<(count + perSession - 1) / perSession {
    let configuration = URLSessionConfiguration.background(withIdentifier: "bench.latency.\(index)")
    configuration.httpMaximumConnectionsPerHost = perSession
    sessions.append(URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil))
}
let submitting = ContinuousClock.now
for number in 0..<count {
    // Each waits a second at the server: the tasks end while later ones are still being
    // handed over (the submissions take 2.5-4 s), as an app's would. Or, `together`, at the
    // gate until all have arrived: they end at once.
    let wait = together
        ? server.appendingPathComponent("gate/latency").appending(queryItems: [URLQueryItem(name: "count", value: "\(count)")])
        : server.appendingPathComponent("delay/1000")
    sessions[number / perSession].downloadTask(with: wait.appending(queryItems: [URLQueryItem(name: "n", value: "\(number)")])).resume()
}
let submitted = ContinuousClock.now - submitting
var heard = 0
let deadline = Task { try await Task.sleep(for: .seconds(120)); delegate.finished.continuation.finish() }
for await _ in delegate.finished.stream {
    heard += 1
    if heard == count { break }
}
deadline.cancel()
for session in sessions { session.finishTasksAndInvalidate() }
let sorted = delegate.latencies.sorted()
guard heard == count, !sorted.isEmpty else {
    print("only \(heard) of \(count) tasks were heard of within 120 s")
    exit(1)
}
func ms(_ seconds: TimeInterval) -> String { String(format: "%.1f ms", seconds * 1000) }
let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
print("\(count) background tasks, \(together ? "all answered at one moment" : "each answered after 1 s") (\(delegate.failures) failed; handed to ferryd in \(submitted.formatted(.units(allowed: [.milliseconds])))): stored → delegate median \(ms(sorted[sorted.count / 2])), p99 \(ms(p99)), max \(ms(sorted[sorted.count - 1]))")
