import Ferry
import FerryTestSupport
import Foundation
import Testing

/// Code written in URLSession's spelling — the tutorials' and samples' — compiled against
/// `import Foundation` and `import Ferry` only, run against a real server on loopback.
@Suite("URLSession's spelling")
struct URLSessionSpellingTests {
    @Test("a completion-handler data task: (Data?, URLResponse?, Error?) on the delegate queue, `as? HTTPURLResponse`")
    func completionHandlerDataTask() async throws {
        try await withServer { server in
            let session = URLSession(configuration: .default, delegate: nil, delegateQueue: nil)
            let outcome = AsyncStream<(Int, Int, Bool, String?)>.makeStream()
            let task = session.dataTask(with: server.url("/bytes/5000?seed=2")) { data, response, error in
                let http = response as? HTTPURLResponse
                outcome.continuation.yield((http?.statusCode ?? 0, data?.count ?? -1, OperationQueue.current === session.delegateQueue,
                                            http?.value(forHTTPHeaderField: "content-length")))
            }
            #expect(task.state == .suspended)
            task.resume()
            var iterator = outcome.stream.makeAsyncIterator()
            let (status, count, onQueue, length) = try #require(await iterator.next())
            #expect(status == 200 && count == 5000 && length == "5000")
            #expect(onQueue, "the handler runs on the session's delegate queue")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("notConnectedToInternet as URLError: its code and networkUnavailableReason under the platform's key")
    func notConnectedAsURLError() {
        var ruledOut = FerryError(.notConnectedToInternet, "the route is over expensive link wwan0", url: URL(string: "http://example.com/a")!)
        ruledOut.networkUnavailableReason = .expensive
        let error = URLError(ruledOut)
        #expect(error.code == .notConnectedToInternet)
        #expect(error.networkUnavailableReason == .expensive)
        #expect(error.userInfo[NSURLErrorNetworkUnavailableReasonKey] as? Int == 1)
        let noLink = URLError(FerryError(.notConnectedToInternet, "no route", url: URL(string: "http://example.com/a")!))
        #expect(noLink.code == .notConnectedToInternet)
        #expect(noLink.networkUnavailableReason == nil)
    }

    @Test("URLRequest's idioms: httpMethod, setValue(_:forHTTPHeaderField:), httpBody, allHTTPHeaderFields")
    func requestIdioms() async throws {
        try await withServer { server in
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.addValue("a", forHTTPHeaderField: "X-Tags")
            request.addValue("b", forHTTPHeaderField: "x-tags")
            request.httpBody = Data("{\"note\":\"hi\"}".utf8)
            #expect(request.value(forHTTPHeaderField: "content-type") == "application/json")
            #expect(request.value(forHTTPHeaderField: "X-TAGS") == "a,b")
            #expect(request.allHTTPHeaderFields?["Content-Type"] == "application/json")
            let (data, response) = try await URLSession.shared.data(for: request)
            let echo = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(echo["method"] as? String == "POST" && echo["bytes"] as? Int == 13 && echo["contentType"] as? String == "application/json")
            var copy = request
            copy.httpMethod = nil
            #expect(copy.httpMethod == "GET", "a nil method is GET, as on the platform")
        }
    }

    @Test("a delegate written with URLSession's names is called; tasks are dictionary keys; the same object every call")
    func delegateWithURLSessionNames() async throws {
        try await withServer { server in
            let uploads = Uploads()
            let session = URLSession(configuration: .ephemeral, delegate: uploads, delegateQueue: nil)
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "PUT"
            let first = session.uploadTask(with: request, from: Data(repeating: 1, count: 70_000))
            let second = session.uploadTask(with: request, from: Data(repeating: 2, count: 10))
            first.resume()
            second.resume()
            try await poll(until: "both uploads to complete", timeout: .seconds(20)) { uploads.completed.count == 2 }
            #expect(uploads.completed.contains(first) && uploads.completed.contains(second), "the delegate got the objects the session made")
            let answer = try #require(uploads.answers[first])
            #expect(String(decoding: answer, as: UTF8.self).contains("\"bytes\":70000"))
            #expect(uploads.errors.allSatisfy { $0 == nil })
            #expect(uploads.sent[first] == 70_000, "didSendBodyData reached the total")
            #expect(uploads.statuses[second] == 200)
            session.invalidateAndCancel()
            try await poll(until: "didBecomeInvalidWithError", timeout: .seconds(5)) { uploads.invalidated }
        }
    }

    @Test("a download delegate: didWriteData, didFinishDownloadingTo; cancel(byProducingResumeData:) and didResumeAtOffset")
    func downloadDelegateAndResumeData() async throws {
        try await withServer { server in
            let downloads = Downloads()
            let session = URLSession(configuration: .default, delegate: downloads, delegateQueue: nil)
            let size = 3_000_000
            let task = session.downloadTask(with: server.url("/bytes/\(size)?seed=31&drip=2000000"))
            task.resume()
            try await poll(until: "some bytes written", timeout: .seconds(20)) { downloads.written > 100_000 }
            let resumeData = await withCheckedContinuation { continuation in task.cancel(byProducingResumeData: { continuation.resume(returning: $0) }) }
            let data = try #require(resumeData, "a download with bytes and a validator gives resume data")
            try await poll(until: "the cancelled task's completion", timeout: .seconds(10)) { downloads.errors.count == 1 }
            let cancelled = try #require(downloads.errors.first as? URLError)
            #expect(cancelled.code == .cancelled)
            let again = session.downloadTask(withResumeData: data)
            again.resume()
            try await poll(until: "the continued download to finish", timeout: .seconds(30)) { downloads.finishedBytes != nil }
            #expect(downloads.resumedAt ?? 0 > 0, "continued from an offset")
            #expect(downloads.finishedBytes == size, "the whole file was there during didFinishDownloadingTo")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("only a timeout set on the request overrides the configuration's; a call made by a cancelled Swift task is cancelled")
    func timeoutsAndEarlyCancellation() async throws {
        #expect(URLRequest(url: URL(string: "http://127.0.0.1/")!).request?.timeoutInterval == nil, "60 s shown, the configuration's used")
        var request = URLRequest(url: URL(string: "http://127.0.0.1/")!)
        #expect(request.timeoutInterval == 60)
        request.timeoutInterval = 5
        #expect(request.request?.timeoutInterval == 5)
        try await withServer { server in
            let url = server.url("/bytes/10")
            let outcome = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                do { _ = try await URLSession.shared.data(from: url); return "answered" } catch let error as URLError { return "\(error.code.rawValue)" } catch { return "\(error)" }
            }.value
            #expect(outcome == "\(URLError.Code.cancelled.rawValue)", "\(outcome)")
        }
    }

    @Test("task.progress follows the bytes and completes; cancelling the progress cancels the task")
    func progress() async throws {
        try await withServer { server in
            let session = URLSession(configuration: .default)
            let (file, _) = try await session.download(from: server.url("/bytes/200000?seed=9"))
            try? FileManager.default.removeItem(at: file)
            let watched = session.downloadTask(with: server.url("/bytes/300000?seed=5"))
            // Progress has no lock on Linux: read and parent it on Ferry's progress queue.
            let overall = SessionTask.progressQueue.sync {
                let overall = Progress.discreteProgress(totalUnitCount: 1)
                overall.addChild(watched.progress, withPendingUnitCount: 1)
                return overall
            }
            watched.resume()
            try await poll(until: "the download's progress to complete", timeout: .seconds(20)) {
                SessionTask.progressQueue.sync { watched.progress.fractionCompleted == 1 }
            }
            let (total, completed, parent) = SessionTask.progressQueue.sync {
                (watched.progress.totalUnitCount, watched.progress.completedUnitCount, overall.fractionCompleted)
            }
            #expect(total == 300_000 && completed == 300_000)
            #expect(parent == 1, "a child of the app's own Progress")

            // A progress first asked for once its task has ended is brought up to date then,
            // whether it is asked for on the progress queue or elsewhere.
            for onQueue in [false, true] {
                let late = session.downloadTask(with: server.url("/bytes/1000?seed=3"))
                late.resume()
                try await poll(until: "a task nobody watched to complete", timeout: .seconds(10)) { late.state == .completed }
                let (completed, fraction) = onQueue
                    ? SessionTask.progressQueue.sync { (late.progress.completedUnitCount, late.progress.fractionCompleted) }
                    : (late.progress.completedUnitCount, late.progress.fractionCompleted)
                #expect(completed == 1000 && fraction == 1, "asked for on the queue: \(onQueue)")
            }

            let slow = session.downloadTask(with: server.url("/bytes/3000000?seed=6&drip=500000"))
            slow.resume()
            try await poll(until: "some bytes", timeout: .seconds(20)) { SessionTask.progressQueue.sync { slow.progress.completedUnitCount > 0 } }
            slow.progress.cancel()
            try await poll(until: "the task to be cancelled through its progress", timeout: .seconds(10)) { slow.state == .completed }
            #expect((slow.error as? URLError)?.code == .cancelled)
            session.invalidateAndCancel()
        }
    }

    @Test("the session's own delegate queue: every call of 200 tasks on it, one at a time, each task's in the platform's order")
    func ownDelegateQueue() async throws {
        try await withServer { server in
            let calls = QueueCalls()
            let session = URLSession(configuration: .ephemeral, delegate: calls, delegateQueue: nil)
            let tasks = (0..<200).map { session.downloadTask(with: server.url("/bytes/\(100 + $0)")) }
            for task in tasks { task.resume() }
            try await poll(until: "200 completions", timeout: .seconds(30), observed: "\(calls.completed) completed") { calls.completed == 200 }
            #expect(calls.offQueue == 0, "every call ran on session.delegateQueue")
            #expect(calls.mostAtOnce == 1, "one call at a time")
            for task in tasks {
                #expect(calls.order[task] == ["finished", "metrics", "complete"], "task \(task.taskIdentifier): \(calls.order[task] ?? [])")
            }
            session.finishTasksAndInvalidate()
        }
    }

    @Test("errors are URLErrors with the platform's codes; the async API; getTasksWithCompletionHandler")
    func errorsAsyncAndTaskLists() async throws {
        do {
            _ = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:1/nothing")!)
            Issue.record("a closed port should fail")
        } catch let error as URLError {
            #expect(error.code == .cannotConnectToHost && error.failingURL?.port == 1 && (error as NSError).domain == NSURLErrorDomain)
        }
        try await withServer { server in
            let configuration = URLSessionConfiguration.default
            configuration.httpAdditionalHeaders = ["X-App": "ported"]
            let session = URLSession(configuration: configuration)
            configuration.httpAdditionalHeaders = ["X-App": "changed later"]
            let (data, _) = try await session.data(from: server.url("/headers"))
            #expect(String(decoding: data, as: UTF8.self).contains("\"x-app\":\"ported\""), "the session took a copy")
            do {
                _ = try await session.data(from: server.url("/bytes/3000?seed=2&claimCoding=gzip"))
                Issue.record("plain bytes labelled gzip should not decode")
            } catch let error as URLError {
                #expect(error.code == .cannotDecodeContentData, "\(error)")
            }
            let (file, response) = try await session.download(from: server.url("/bytes/1000?seed=4"))
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(try Data(contentsOf: file).count == 1000 && (response as? HTTPURLResponse)?.statusCode == 200, "the file is the caller's")

            let data1 = session.dataTask(with: server.url("/bytes/1"))
            let upload = session.uploadTask(with: URLRequest(url: server.url("/upload")), from: Data())
            let download = session.downloadTask(with: server.url("/bytes/1"))
            let lists = await withCheckedContinuation { continuation in
                session.getTasksWithCompletionHandler { continuation.resume(returning: ($0, $1, $2)) }
            }
            #expect(lists.0 == [data1] && lists.1 == [upload] && lists.2 == [download], "\(lists)")
            #expect(Set(await session.allTasks) == Set([data1, upload, download] as [URLSessionTask]))
            session.invalidateAndCancel()
        }
    }
}

/// The samples' upload delegate, in URLSession's names.
final class Uploads: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var _answers: [URLSessionTask: Data] = [:]
    private var _sent: [URLSessionTask: Int64] = [:]
    private var _statuses: [URLSessionTask: Int] = [:]
    private var _completed: [URLSessionTask] = []
    private var _errors: [Error?] = []
    private var _invalidated = false
    var answers: [URLSessionTask: Data] { lock.withLock { _answers } }
    var sent: [URLSessionTask: Int64] { lock.withLock { _sent } }
    var statuses: [URLSessionTask: Int] { lock.withLock { _statuses } }
    var completed: [URLSessionTask] { lock.withLock { _completed } }
    var errors: [Error?] { lock.withLock { _errors } }
    var invalidated: Bool { lock.withLock { _invalidated } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { _answers[dataTask, default: Data()].append(data) }
    }
    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        lock.withLock { _sent[task] = totalBytesSent }
    }
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        lock.withLock {
            _statuses[task] = (task.response as? HTTPURLResponse)?.statusCode
            _completed.append(task)
            _errors.append(error)
        }
    }
    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: Error?) {
        lock.withLock { _invalidated = true }
    }
}

/// The tutorial's download delegate, in URLSession's names.
final class Downloads: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var _written: Int64 = 0
    private var _resumedAt: Int64?
    private var _finishedBytes: Int?
    private var _errors: [Error] = []
    var written: Int64 { lock.withLock { _written } }
    var resumedAt: Int64? { lock.withLock { _resumedAt } }
    var finishedBytes: Int? { lock.withLock { _finishedBytes } }
    var errors: [Error] { lock.withLock { _errors } }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let size = (try? FileManager.default.attributesOfItem(atPath: location.path)[.size] as? Int) ?? -1
        lock.withLock { _finishedBytes = size }
    }
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64,
                    totalBytesExpectedToWrite: Int64) {
        lock.withLock { _written = totalBytesWritten }
    }
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
        lock.withLock { _resumedAt = fileOffset }
    }
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        if let error { lock.withLock { _errors.append(error) } }
    }
}

/// Where and in what order a download delegate is called (each call lingers a little, so that
/// two at once would show).
final class QueueCalls: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var running = 0
    private var _mostAtOnce = 0
    private var _offQueue = 0
    private var _order: [URLSessionTask: [String]] = [:]
    private var _completed = 0
    var mostAtOnce: Int { lock.withLock { _mostAtOnce } }
    var offQueue: Int { lock.withLock { _offQueue } }
    var order: [URLSessionTask: [String]] { lock.withLock { _order } }
    var completed: Int { lock.withLock { _completed } }

    private func call(_ name: String, _ session: URLSession, _ task: URLSessionTask) {
        lock.withLock {
            running += 1
            _mostAtOnce = max(_mostAtOnce, running)
            if OperationQueue.current !== session.delegateQueue { _offQueue += 1 }
            _order[task, default: []].append(name)
        }
        usleep(200)
        lock.withLock {
            running -= 1
            if name == "complete" { _completed += 1 }
        }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        call("finished", session, downloadTask)
    }
    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        call("metrics", session, task)
    }
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        call("complete", session, task)
    }
}
