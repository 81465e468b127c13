import Ferry
import FerryTestSupport
import Foundation
import Testing

@Suite("Sessions and tasks, as URLSession")
struct SessionTests {
    @Test("tasks are created suspended, with identifiers unique in their session")
    func createdSuspended() async throws {
        let session = Session(configuration: .ephemeral)
        let a = session.dataTask(with: URL(string: "http://127.0.0.1:1/a")!)
        let b = session.downloadTask(with: URL(string: "http://127.0.0.1:1/b")!)
        #expect(a.state == .suspended && b.state == .suspended)
        #expect(a.taskIdentifier != b.taskIdentifier)
        a.taskDescription = "first"
        #expect(a.taskDescription == "first")
        #expect(session.allTasks.count == 2)
        a.cancel()
        b.cancel()
        await a.waitUntilCompleted()
        #expect(a.state == .completed)
        #expect(a.error?.code == .cancelled)
        session.invalidateAndCancel()
    }

    @Test("a data task's delegate callbacks come in order, one at a time: response, data, completion")
    func dataTaskDelegateOrder() async throws {
        try await withServer { server in
            let delegate = RecordingDelegate()
            let session = Session(configuration: .default, delegate: delegate)
            let task = session.dataTask(with: server.url("/bytes/300000?seed=3"))
            task.resume()
            _ = await delegate.nextCompletion()
            let log = delegate.log
            #expect(log.first == "response 200")
            #expect(log.last == "complete ok")
            #expect(log.dropFirst().dropLast().allSatisfy { $0 == "data" })
            #expect(delegate.data.count == 300_000)
            #expect(!delegate.overlapped)
            #expect(task.countOfBytesReceived == 300_000)
            #expect(task.response?.statusCode == 200)
            #expect(task.state == .completed)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a delegate may cancel on the response")
    func cancelOnResponse() async throws {
        try await withServer { server in
            let delegate = RecordingDelegate()
            delegate.cancelOnResponse = true
            let session = Session(configuration: .default, delegate: delegate)
            session.dataTask(with: server.url("/bytes/100000?seed=1")).resume()
            let error = await delegate.nextCompletion()
            #expect(error??.code == .cancelledByDelegate)
            session.invalidateAndCancel()
        }
    }

    @Test("httpAdditionalHeaders reach the wire; a request's own header wins")
    func additionalHeaders() async throws {
        try await withServer { server in
            var configuration = Configuration.default
            configuration.httpAdditionalHeaders = ["Authorization": "Bearer s3cret", "Accept": "application/json"]
            let session = Session(configuration: configuration)
            var request = Request(url: server.url("/headers"))
            request.headers["Accept"] = "text/plain"
            let (data, response) = try await session.data(for: request)
            #expect(response.statusCode == 200)
            let headers = try JSONSerialization.jsonObject(with: data) as? [String: String]
            #expect(headers?["authorization"] == "Bearer s3cret")
            #expect(headers?["accept"] == "text/plain")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a GET whose connection closes before any response is sent once more at once (as URLSession does); a POST is not")
    func closedBeforeResponse() async throws {
        try await withServer { server in
            let session = Session(configuration: .ephemeral)  // retryPolicy .none
            let (data, response) = try await session.data(for: Request(url: server.url("/flaky/get?failures=1&status=close&then=/bytes/100%3Fseed%3D3")))
            #expect(response.statusCode == 200)
            #expect(data == Data(TestContent.bytes(count: 100, seed: 3)))
            #expect(server.requests.filter { $0.path == "/flaky/get" }.count == 2)

            // Twice closed: one resend only, then the error.
            await #expect(throws: FerryError.self) {
                _ = try await session.data(for: Request(url: server.url("/flaky/twice?failures=2&status=close&then=/bytes/10")))
            }
            #expect(server.requests.filter { $0.path == "/flaky/twice" }.count == 2)

            var post = Request(url: server.url("/flaky/post?failures=1&status=close&then=/bytes/10"), method: "POST")
            post.body = Data("note".utf8)
            let error = await #expect(throws: FerryError.self) { _ = try await session.data(for: post) }
            #expect(error?.code == .networkConnectionLost)
            #expect(server.requests.filter { $0.path == "/flaky/post" }.count == 1, "a POST is never sent twice")
        }
    }

    @Test("an HTTP error status is a response, not an error")
    func statusIsResponse() async throws {
        try await withServer { server in
            let (_, response) = try await Session.shared.data(for: Request(url: server.url("/status/404")))
            #expect(response.statusCode == 404)
        }
    }

    @Test("transport failures are FerryErrors with codes")
    func transportError() async throws {
        do {
            _ = try await Session.shared.data(for: Request(url: URL(string: "http://127.0.0.1:1/")!))
            Issue.record("expected an error")
        } catch let error as FerryError {
            #expect(error.code == .cannotConnectToHost)
            #expect(error.underlyingError != nil)
        }
    }

    @Test("the request time-out comes from the configuration")
    func requestTimeout() async throws {
        try await withServer { server in
            var configuration = Configuration.ephemeral
            configuration.timeoutIntervalForRequest = 1
            let session = Session(configuration: configuration)
            do {
                _ = try await session.data(for: Request(url: server.url("/slow-headers/5000")))
                Issue.record("expected a time-out")
            } catch let error as FerryError {
                #expect(error.code == .timedOut)
            }
            session.invalidateAndCancel()
        }
    }

    @Test("a time-out ends its own task alone: the one beside it in the session completes, and a resource time-out says so")
    func timeoutEndsItsTaskAlone() async throws {
        try await withServer { server in
            // The engine runs a session's transfer in the session's own run task and stops that
            // task when the transfer times out: the other run must not be touched.
            let session = Session(configuration: .ephemeral)
            var stalled = Request(url: server.url("/slow-headers/2500"))
            stalled.timeoutInterval = 0.5
            async let timedOut: (Data, Response) = session.data(for: stalled)
            async let beside: (Data, Response) = session.data(for: Request(url: server.url("/delay/1500")))
            do {
                _ = try await timedOut
                Issue.record("expected the stalled request to time out")
            } catch let error as FerryError {
                #expect(error.code == .timedOut)
            }
            let (body, response) = try await beside
            #expect(response.statusCode == 200)
            #expect(String(decoding: body, as: UTF8.self) == "ok")
            session.invalidateAndCancel()

            var configuration = Configuration.ephemeral
            configuration.timeoutIntervalForResource = 0.5
            let bounded = Session(configuration: configuration)
            do {
                _ = try await bounded.data(for: Request(url: server.url("/delay/2500")))
                Issue.record("expected the resource time-out")
            } catch let error as FerryError {
                #expect(error.code == .timedOut)
                #expect(error.message.contains("timeoutIntervalForResource"))
            }
            bounded.invalidateAndCancel()
        }
    }

    @Test("tasks waiting behind httpMaximumConnectionsPerHost: a cancel ends one in the queue, a suspended one waits again when resumed, a request time-out passes there; the rest run in turn")
    func tasksWaitingForTheirHost() async throws {
        try await withServer { server in
            var configuration = Configuration.ephemeral
            configuration.httpMaximumConnectionsPerHost = 1
            let session = Session(configuration: configuration)
            // The first holds the host's one slot until it is let go (a gate of two, the second
            // request being another session's).
            let holder = session.dataTask(with: server.url("/gate/queue?count=2"))
            holder.resume()
            try await poll(until: "the holder's request at the server", timeout: .seconds(10)) {
                server.requests.contains { $0.uri.hasPrefix("/gate/queue") }
            }
            let cancelled = session.dataTask(with: server.url("/bytes/1?n=cancelled"))
            let suspended = session.dataTask(with: server.url("/bytes/2?n=suspended"))
            var impatientRequest = Request(url: server.url("/bytes/3?n=impatient"))
            impatientRequest.timeoutInterval = 0.3
            let impatient = session.dataTask(with: impatientRequest)
            let last = session.dataTask(with: server.url("/bytes/4?n=last"))
            for task in [cancelled, suspended, impatient, last] { task.resume() }

            cancelled.cancel()
            await cancelled.waitUntilCompleted()
            #expect(cancelled.error?.code == .cancelled, "\(String(describing: cancelled.error))")
            suspended.suspend()
            await impatient.waitUntilCompleted()
            #expect(impatient.error?.code == .timedOut, "timed out in the queue: \(String(describing: impatient.error))")
            #expect(holder.state == .running && last.state == .running && suspended.state == .suspended)

            let opener = Session(configuration: .ephemeral)
            _ = try await opener.data(for: Request(url: server.url("/gate/queue?count=2")))
            opener.invalidateAndCancel()
            await holder.waitUntilCompleted()
            await last.waitUntilCompleted()
            #expect(holder.error == nil && last.error == nil && last.response?.statusCode == 200)
            suspended.resume()
            await suspended.waitUntilCompleted()
            #expect(suspended.error == nil && suspended.countOfBytesReceived == 2)
            let asked = server.requests.map(\.uri)
            #expect(!asked.contains { $0.contains("n=cancelled") || $0.contains("n=impatient") }, "never sent: \(asked)")
            session.invalidateAndCancel()
        }
    }

    @Test("a cancel racing resume() from another thread always ends the task cancelled, never with the response it would have had")
    func cancelRacingResume() async throws {
        try await withServer { server in
            let session = Session(configuration: .ephemeral)
            let tasks = (0..<300).map { _ in session.dataTask(with: server.url("/delay/3000")) }
            resumeAndCancelAtOnce(tasks)
            for task in tasks { await task.waitUntilCompleted() }
            let notCancelled = tasks.filter { $0.error?.code != .cancelled }
            #expect(notCancelled.isEmpty, "\(notCancelled.count) of \(tasks.count) ended otherwise: \(notCancelled.prefix(3).map { String(describing: $0.error) })")
            session.invalidateAndCancel()
            // Connects of cancelled requests may still be on their way: the server is shut down
            // once no new connection arrived for a while.
            var seen = -1
            try await poll(until: "the connects of the cancelled requests to settle", timeout: .seconds(10), every: .milliseconds(300),
                           observed: "\(server.totalConnections) connections") {
                defer { seen = server.totalConnections }
                return server.totalConnections == seen
            }
        }
    }

    @Test("bytes(for:) streams the body at the reader's pace")
    func bytesStream() async throws {
        try await withServer { server in
            let (bytes, response) = try await Session.shared.bytes(for: Request(url: server.url("/bytes/200000?seed=6")))
            #expect(response.statusCode == 200)
            var received: [UInt8] = []
            for try await byte in bytes { received.append(byte) }
            #expect(received == TestContent.bytes(count: 200_000, seed: 6))
        }
    }

    @Test("task events arrive in order and end with completed")
    func eventsStream() async throws {
        try await withServer { server in
            let session = Session(configuration: .default)
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let task = session.downloadTask(with: server.url("/bytes/500000?seed=2"))
            let events = task.events
            task.resume()
            var names: [String] = []
            var lastTotal: Int64 = -1
            for await event in events {
                switch event {
                case .response: names.append("response")
                case .wroteData(_, let total, _): lastTotal = total
                case .finishedDownloading: names.append("finished")
                case .completed(let error): names.append(error == nil ? "completed" : "failed")
                default: break
                }
            }
            #expect(names == ["response", "finished", "completed"])
            #expect(lastTotal == 500_000)
            session.finishTasksAndInvalidate()
        }
    }
}
