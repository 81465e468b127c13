import Ferry
import FerryTestSupport
import Foundation
import Testing

/// `urlSession(_:task:didFinishCollecting:)`: each request of a task, timed and counted,
/// once, before the completion.
@Suite("Task metrics")
struct MetricsTests {
    @Test("a redirected download: a transaction per request, the redirects counted, times in order, bytes, protocol; before didCompleteWithError")
    func redirected() async throws {
        try await withServer { server in
            let recorder = MetricsRecorder()
            let session = URLSession(configuration: .ephemeral, delegate: recorder, delegateQueue: nil)
            let (data, _) = try await session.data(from: server.url("/redirect/2?to=/bytes/5000"))
            #expect(data.count == 5000)
            let metrics = try #require(await recorder.next())
            #expect(recorder.order == ["metrics", "complete"], "metrics come once, just before the completion")
            #expect(metrics.transactionMetrics.count == 3 && metrics.redirectCount == 2)
            #expect(zip(metrics.transactionMetrics, metrics.transactionMetrics).allSatisfy { $0 === $1 },
                    "made once, on first use: the same objects each time")
            #expect(metrics.transactionMetrics.map { ($0.response as? HTTPURLResponse)?.statusCode } == [302, 302, 200])
            let last = try #require(metrics.transactionMetrics.last)
            #expect(last.countOfResponseBodyBytesReceived == 5000 && last.networkProtocolName == "http/1.1" && !last.isProxyConnection)
            #expect(last.request.url?.path == "/bytes/5000")
            for transaction in metrics.transactionMetrics {
                let dates = [transaction.fetchStartDate, transaction.requestStartDate, transaction.responseStartDate, transaction.responseEndDate]
                let present = dates.compactMap { $0 }
                #expect(present.count == 4 && present == present.sorted(), "fetch ≤ request ≤ response start ≤ end")
                #expect(present.allSatisfy { metrics.taskInterval.contains($0) })
            }
            session.finishTasksAndInvalidate()
        }
    }

    @Test("plain http: the first request opens its connection (connect dates in order, its two ends), the next reuses it")
    func connection() async throws {
        try await withServer { server in
            let recorder = MetricsRecorder()
            let session = URLSession(configuration: .ephemeral, delegate: recorder, delegateQueue: nil)
            _ = try await session.data(from: server.url("/bytes/100"))
            let first = try #require(await recorder.next()?.transactionMetrics.first)
            _ = try await session.data(from: server.url("/bytes/200"))
            let second = try #require(await recorder.next()?.transactionMetrics.first)

            #expect(!first.isReusedConnection)
            let connect = [first.fetchStartDate, first.connectStartDate, first.connectEndDate, first.requestStartDate]
            #expect(connect.compactMap { $0 }.count == 4 && connect.compactMap { $0 } == connect.compactMap { $0 }.sorted(),
                    "fetch ≤ connect start ≤ connect end ≤ request")
            #expect(first.domainLookupStartDate == nil && first.domainLookupEndDate == nil, "an address needs no lookup")
            #expect(first.remoteAddress == "127.0.0.1" && first.remotePort == server.port)
            #expect(first.localAddress == "127.0.0.1" && (first.localPort ?? 0) > 0)

            #expect(second.isReusedConnection)
            #expect(second.connectStartDate == nil && second.connectEndDate == nil)
            #expect(second.localPort == first.localPort, "the same connection")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("plain http to a host name: its lookup is timed, then the connect (lookup start ≤ end ≤ connect start ≤ end ≤ request)")
    func nameLookup() async throws {
        try await withServer { server in
            let recorder = MetricsRecorder()
            let session = URLSession(configuration: .ephemeral, delegate: recorder, delegateQueue: nil)
            // /etc/hosts names 127.0.0.1 localhost on any machine these tests run on.
            let url = URL(string: "http://localhost:\(server.port)/bytes/100")!
            let (data, _) = try await session.data(from: url)
            #expect(data.count == 100)
            let first = try #require(await recorder.next()?.transactionMetrics.first)
            let steps = [first.fetchStartDate, first.domainLookupStartDate, first.domainLookupEndDate,
                         first.connectStartDate, first.connectEndDate, first.requestStartDate]
            #expect(steps.allSatisfy { $0 != nil }, "\(steps)")
            #expect(steps.compactMap { $0 } == steps.compactMap { $0 }.sorted(), "each step after the one before: \(steps)")
            #expect(first.remoteAddress == "127.0.0.1")

            _ = try await session.data(from: url)
            let second = try #require(await recorder.next()?.transactionMetrics.first)
            #expect(second.isReusedConnection && second.domainLookupStartDate == nil && second.connectStartDate == nil,
                    "a kept-alive connection was neither looked up nor connected again")

            // A name that does not resolve (RFC 6761's .invalid) is the platform's cannotFindHost.
            let failure = await #expect(throws: URLError.self) {
                _ = try await session.data(from: URL(string: "http://no-such-host.invalid:\(server.port)/bytes/1")!)
            }
            #expect(failure?.code == .cannotFindHost)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("an upload counts its body; a request that fails has a transaction without a response")
    func uploadAndFailure() async throws {
        try await withServer { server in
            let recorder = MetricsRecorder()
            let session = URLSession(configuration: .ephemeral, delegate: recorder, delegateQueue: nil)
            var request = URLRequest(url: server.url("/upload/m"))
            request.httpMethod = "PUT"
            _ = try await session.upload(for: request, from: Data(repeating: 7, count: 12_345))
            let upload = try #require(await recorder.next())
            #expect(upload.transactionMetrics.first?.countOfRequestBodyBytesSent == 12_345)

            _ = try? await session.data(from: URL(string: "http://127.0.0.1:9/closed")!)
            let failed = try #require(await recorder.next())
            #expect(failed.transactionMetrics.count == 1 && failed.transactionMetrics.first?.response == nil)
            #expect(failed.redirectCount == 0)
            session.finishTasksAndInvalidate()
        }
    }
}

/// Keeps each task's metrics and the order of the calls.
private final class MetricsRecorder: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var _order: [String] = []
    private let stream = AsyncStream<URLSessionTaskMetrics>.makeStream()
    private var iterator: AsyncStream<URLSessionTaskMetrics>.Iterator
    var order: [String] { lock.withLock { _order } }

    override init() {
        iterator = stream.stream.makeAsyncIterator()
    }

    func next() async -> URLSessionTaskMetrics? {
        var copy = iterator
        defer { iterator = copy }
        return await copy.next()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        lock.withLock { _order.append("metrics") }
        stream.continuation.yield(metrics)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        lock.withLock { _order.append("complete") }
    }
}
