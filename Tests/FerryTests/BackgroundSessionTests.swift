import Ferry
import FerryTestSupport
import Foundation
import Testing

/// Background sessions against a real ferryd process of the test's own (its own data and
/// runtime directories), and real servers on loopback.
@Suite("Background sessions through ferryd", .serialized, .timeLimit(.minutes(1)))
struct BackgroundSessionTests {
    @Test("an upload from a file goes through ferryd and completes once, with the server's response body")
    func uploadFromFile() async throws {
        try await withDaemonAndServer { daemon, server in
            let directory = try makeTemporaryDirectory()
            let file = directory.appendingPathComponent("photo.bin")
            let content = Data(TestContent.bytes(count: 3 << 20, seed: 7))
            try content.write(to: file)
            let delegate = RecordingDelegate()
            let session = try Session.background(daemon.configuration("bg.upload.file"), delegate: delegate)
            let task = session.uploadTask(with: Request(url: server.url("/upload/photo.bin"), method: "POST"), fromFile: file)
            task.resume()
            #expect(succeeded(await delegate.nextCompletion()))
            let reply = try JSONSerialization.jsonObject(with: delegate.data) as? [String: Any]
            #expect(reply?["sha256"] as? String == sha256Hex(content))
            #expect(task.response?.statusCode == 200)
            #expect(delegate.log.filter { $0.hasPrefix("complete") }.count == 1)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a background task's metrics end when ferryd stored its outcome: before the delegate hears of it, after it began")
    func metricsEndWhenStored() async throws {
        try await withDaemonAndServer { daemon, server in
            let delegate = IntervalDelegate()
            let session = try Session.background(daemon.configuration("bg.metrics"), delegate: delegate)
            let began = Date()
            session.dataTask(with: server.url("/delay/300")).resume()
            let (interval, heard) = try #require(await delegate.next())
            #expect(interval.start >= began.addingTimeInterval(-1) && interval.end > interval.start, "\(interval)")
            #expect(interval.duration >= 0.3, "the server waited 300 ms: \(interval)")
            #expect(interval.end <= heard, "stored (\(interval.end)) before heard (\(heard))")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("an upload from Data is written into the session's container first, then sent by ferryd")
    func uploadFromData() async throws {
        try await withDaemonAndServer { daemon, server in
            let content = Data(TestContent.bytes(count: 200_000, seed: 3))
            let delegate = RecordingDelegate()
            let session = try Session.background(daemon.configuration("bg.upload.data"), delegate: delegate)
            let task = session.uploadTask(with: Request(url: server.url("/upload/d"), method: "PUT"), from: content)
            task.resume()
            #expect(succeeded(await delegate.nextCompletion()))
            let reply = try JSONSerialization.jsonObject(with: delegate.data) as? [String: Any]
            #expect(reply?["sha256"] as? String == sha256Hex(content))
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a stream cannot outlive the process: a background upload from a stream fails with a clear error")
    func streamUploadIsRefused() async throws {
        try await withDaemonAndServer { daemon, server in
            let delegate = RecordingDelegate()
            let session = try Session.background(daemon.configuration("bg.upload.stream"), delegate: delegate)
            let task = session.uploadTask(with: Request(url: server.url("/upload/s"), method: "PUT"), body: .stream(length: 4) {
                AsyncThrowingStream { $0.yield([1, 2, 3, 4]); $0.finish() }
            })
            task.resume()
            let error = await delegate.nextCompletion()
            #expect(error??.code == .unsupportedURL)
            #expect(error??.message.contains("stream") == true)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a download is handed to the delegate in the container and deleted after the callback")
    func downloadHandedOver() async throws {
        try await withDaemonAndServer { daemon, server in
            let directory = try makeTemporaryDirectory()
            let delegate = RecordingDelegate()
            delegate.keepCopyOfDownloadAt = directory.appendingPathComponent("copy.bin")
            let session = try Session.background(daemon.configuration("bg.download"), delegate: delegate)
            let task = session.downloadTask(with: server.url("/bytes/\(5 << 20)?seed=11"))
            task.resume()
            #expect(succeeded(await delegate.nextCompletion()))
            #expect(delegate.finishedFileExisted == true)
            let copy = try Data(contentsOf: directory.appendingPathComponent("copy.bin"))
            #expect(sha256Hex(copy) == TestContent.sha256Hex(count: 5 << 20, seed: 11))
            let location = try #require(delegate.finishedLocation)
            #expect(location.path.hasPrefix(daemon.dataDirectory.path))
            #expect(!FileManager.default.fileExists(atPath: location.path))
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a download's expected SHA-256 reaches ferryd: the right digest completes, a wrong one fails with integrityCheckFailed")
    func expectedDigest() async throws {
        try await withDaemonAndServer { daemon, server in
            let delegate = RecordingDelegate()
            let session = try Session.background(daemon.configuration("bg.digest"), delegate: delegate)
            var right = Request(url: server.url("/bytes/40000?seed=21"))
            right.expectedSHA256 = TestContent.sha256Hex(count: 40000, seed: 21).uppercased()
            session.downloadTask(with: right).resume()
            #expect(succeeded(await delegate.nextCompletion()))
            var wrong = Request(url: server.url("/bytes/40000?seed=22"))
            wrong.expectedSHA256 = TestContent.sha256Hex(count: 40000, seed: 21)
            session.downloadTask(with: wrong).resume()
            let error = await delegate.nextCompletion()
            #expect(error??.code == .integrityCheckFailed, "\(String(describing: error))")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a background session's cookies: sent with the submission, stored from the response event")
    func cookies() async throws {
        try await withDaemonAndServer { daemon, server in
            let storage = HTTPCookieStorage()
            let delegate = RecordingDelegate()
            let session = try Session.background(daemon.configuration("bg.cookies").with(storage), delegate: delegate)
            session.dataTask(with: Request(url: server.url("/set-cookie?c=bg%3D1%3B%20Path%3D%2F"))).resume()
            #expect(succeeded(await delegate.nextCompletion()))
            #expect(storage.cookies?.map(\.name) == ["bg"], "stored when the response's event arrived")
            let echo = RecordingDelegate()
            let second = try Session.background(daemon.configuration("bg.cookies.2").with(storage), delegate: echo)
            second.dataTask(with: Request(url: server.url("/headers"))).resume()
            #expect(succeeded(await echo.nextCompletion()))
            let headers = try JSONSerialization.jsonObject(with: echo.data) as? [String: String]
            #expect(headers?["cookie"] == "bg=1", "ferryd sent the cookie the submission carried")
            session.finishTasksAndInvalidate()
            second.finishTasksAndInvalidate()
        }
    }

    @Test("a second owner of the same session gets backgroundSessionInUseByAnotherProcess at once")
    func secondOwnerRefused() async throws {
        try await withDaemonAndServer { daemon, _ in
            let first = try Session.background(daemon.configuration("bg.owner"))
            let start = ContinuousClock.now
            #expect(throws: FerryError.self) { _ = try Session.background(daemon.configuration("bg.owner")) }
            do {
                _ = try Session.background(daemon.configuration("bg.owner"))
            } catch let error as FerryError {
                #expect(error.code == .backgroundSessionInUseByAnotherProcess)
            }
            #expect(ContinuousClock.now - start < .seconds(2))
            first.finishTasksAndInvalidate()
            // Once the first has gone, the session is free again.
            let again = try await reattach(daemon, "bg.owner")
            again.finishTasksAndInvalidate()
        }
    }

    @Test("after invalidate the task goes on in ferryd; the session made again has it and gets its one completion")
    func reattachAfterInvalidate() async throws {
        try await withDaemonAndServer { daemon, server in
            let first = try Session.background(daemon.configuration("bg.reattach"))
            let task = first.downloadTask(with: server.url("/bytes/\(2 << 20)?seed=5&stallAfter=100000&stallSeconds=1"))
            task.resume()
            let identifier = task.taskIdentifier
            first.finishTasksAndInvalidate()

            let delegate = RecordingDelegate()
            let second = try await reattach(daemon, "bg.reattach", delegate: delegate)
            #expect(second.allTasks.map(\.taskIdentifier).contains(identifier))
            #expect(succeeded(await delegate.nextCompletion()))
            #expect(delegate.log.filter { $0.hasPrefix("complete") }.count == 1)
            second.finishTasksAndInvalidate()
        }
    }

    @Test("invalidating right after a completion (from another thread) does not hand it to the next process again: each event reaches the app once")
    func completionIsNotRedeliveredAfterInvalidate() async throws {
        try await withDaemonAndServer { daemon, server in
            for round in 1...3 {
                let identifier = "bg.once.\(round)"
                let firstLog = CompletionsByTask()
                let first = try Session.background(daemon.configuration(identifier), delegate: firstLog)
                let task = first.downloadTask(with: server.url("/bytes/100?seed=\(round)"))
                task.resume()
                // The app leaves the moment its delegate has seen the completion, as an
                // extension or a relaunched app does.
                _ = await firstLog.completed.stream.first { _ in true }
                first.finishTasksAndInvalidate()

                let secondLog = CompletionsByTask()
                let second = try await reattach(daemon, identifier, delegate: secondLog)
                // A redelivered event comes right after the attach (ferryd replays what is
                // stored, then says eventsFinished; with nothing stored it says nothing).
                for _ in 0..<40 where secondLog.tasks.isEmpty { try await Task.sleep(for: .milliseconds(25)) }
                #expect(firstLog.tasks == [task.taskIdentifier])
                #expect(secondLog.tasks.isEmpty, "round \(round): the completion came again: \(secondLog.tasks)")
                second.finishTasksAndInvalidate()
            }
        }
    }

    @Test("resume() is durable: ferryd killed with SIGKILL right after it still carries the task after a restart")
    func durableAcrossKill() async throws {
        try await withDaemonAndServer { daemon, server in
            let first = try Session.background(daemon.configuration("bg.kill"))
            let size = 8 << 20
            let task = first.downloadTask(with: server.url("/bytes/\(size)?seed=9&stallAfter=1000000&stallSeconds=1"))
            task.resume()
            try daemon.kill9()
            first.finishTasksAndInvalidate()
            try await daemon.restart()

            let delegate = RecordingDelegate()
            let directory = try makeTemporaryDirectory()
            delegate.keepCopyOfDownloadAt = directory.appendingPathComponent("after-kill.bin")
            let second = try Session.background(daemon.configuration("bg.kill"), delegate: delegate)
            #expect(second.allTasks.map(\.taskIdentifier) == [task.taskIdentifier])
            #expect(succeeded(await delegate.nextCompletion()))
            let copy = try Data(contentsOf: directory.appendingPathComponent("after-kill.bin"))
            #expect(sha256Hex(copy) == TestContent.sha256Hex(count: size, seed: 9))
            second.finishTasksAndInvalidate()
        }
    }

    @Test("ferryd killed with SIGKILL in the middle of a download: the live session reconnects, starting ferryd again, and gets its one completion with the whole file")
    func reconnectsAfterACrash() async throws {
        try await withDaemonAndServer { daemon, server in
            let delegate = RecordingDelegate()
            let directory = try makeTemporaryDirectory()
            delegate.keepCopyOfDownloadAt = directory.appendingPathComponent("reconnected.bin")
            let session = try Session.background(daemon.configuration("bg.reconnect"), delegate: delegate)
            let size = 4 << 20
            let task = session.downloadTask(with: server.url("/bytes/\(size)?seed=11&stallAfter=1000000&stallSeconds=2"))
            task.resume()
            try await poll(until: "ferryd to start the download", timeout: .seconds(10)) {
                server.requests.contains { $0.path.hasPrefix("/bytes/\(size)") }
            }
            try daemon.kill9()
            // Nobody else starts ferryd: the session's reconnection does.
            #expect(succeeded(await delegate.nextCompletion()))
            let copy = try Data(contentsOf: directory.appendingPathComponent("reconnected.bin"))
            #expect(sha256Hex(copy) == TestContent.sha256Hex(count: size, seed: 11))
            #expect(delegate.log.filter { $0.hasPrefix("complete") }.count == 1)
            #expect(session.allTasks.isEmpty)
            #expect(!daemon.runningDaemonPIDs().isEmpty, "no ferryd runs: who completed the task?")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a cancel racing resume() from another thread: the task ends cancelled here and in ferryd, whichever reached ferryd first")
    func cancelRacingResume() async throws {
        try await withDaemonAndServer { daemon, server in
            let session = try Session.background(daemon.configuration("bg.race"))
            let tasks = (0..<100).map { _ in session.dataTask(with: server.url("/delay/1000")) }
            resumeAndCancelAtOnce(tasks)
            for task in tasks { await task.waitUntilCompleted() }
            #expect(tasks.allSatisfy { $0.error?.code == .cancelled }, "every task ended cancelled here")
            // A transfer ferryd ran for nobody would be answered after a second: none may be.
            try await Task.sleep(for: .milliseconds(2500))
            let listed = try await runFerry(["list", "--json", "--session", "bg.race"], environment: daemon.environment)
            let finished = listed.output.components(separatedBy: "\"completed\"").count - 1
            #expect(finished == 0, "\(finished) tasks ran to their end in ferryd after being cancelled here")
            session.invalidateAndCancel()
        }
    }

    @Test("httpMaximumConnectionsPerHost goes to ferryd with the session: 1 means one transfer at a time")
    func connectionLimitTravels() async throws {
        try await withDaemonAndServer { daemon, server in
            var configuration = daemon.configuration("bg.limit")
            configuration.httpMaximumConnectionsPerHost = 1
            let delegate = RecordingDelegate()
            let session = try Session.background(configuration, delegate: delegate)
            for seed in 1...3 {
                session.downloadTask(with: server.url("/bytes/300000?seed=\(seed)&stallAfter=100000&stallSeconds=0.3")).resume()
            }
            for _ in 1...3 { #expect(succeeded(await delegate.nextCompletion())) }
            #expect(server.maxConcurrentConnections == 1)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("the same idempotency key twice: ferryd keeps one task, the server gets one request, both task objects complete")
    func idempotencyKey() async throws {
        try await withDaemonAndServer { daemon, server in
            let directory = try makeTemporaryDirectory()
            let file = directory.appendingPathComponent("once.bin")
            try Data(TestContent.bytes(count: 500_000, seed: 12)).write(to: file)
            let session = try Session.background(daemon.configuration("bg.key"))
            let request = Request(url: server.url("/upload/once"), method: "POST")
            let first = session.uploadTask(with: request, fromFile: file)
            first.idempotencyKey = "share-001"
            weak var released: UploadTask?
            do {
                let second = session.uploadTask(with: request, fromFile: file)
                second.idempotencyKey = "share-001"
                released = second
                first.resume()
                second.resume()
                await first.waitUntilCompleted()
                await second.waitUntilCompleted()
                #expect(first.error == nil && second.error == nil)
            }
            #expect(server.requests.filter { $0.path.hasPrefix("/upload/once") }.count == 1)
            // The session lets go of the second object once it completed (it kept it for its life).
            try await poll(until: "the completed second task object is released", timeout: .seconds(5)) { released == nil }
            // Submitted again after it ended: the new object completes at once, as the first did.
            let third = session.uploadTask(with: request, fromFile: file)
            third.idempotencyKey = "share-001"
            third.resume()
            await third.waitUntilCompleted()
            #expect(third.error == nil)
            #expect(server.requests.filter { $0.path.hasPrefix("/upload/once") }.count == 1)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("the library starts ferryd when nobody answers, and two sessions racing start one")
    func startsDaemonOnDemand() async throws {
        let daemon = try DaemonHarness.prepare()  // directories only: no ferryd yet
        defer { daemon.stop() }  // the ferryd the library started, then the directories
        async let a = Task.detached { try Session.background(daemon.configuration("bg.race.a")) }.value
        async let b = Task.detached { try Session.background(daemon.configuration("bg.race.b")) }.value
        let (first, second) = try await (a, b)
        let pids = daemon.runningDaemonPIDs()
        #expect(pids.count == 1)
        first.finishTasksAndInvalidate()
        second.finishTasksAndInvalidate()
    }
}

/// Whether a recorded completion is a success (a completion, with no error).
func succeeded(_ completion: FerryError??) -> Bool {
    if case .some(.none) = completion { return true }
    return false
}

/// The background session `identifier` made again, once ferryd has noticed that its previous
/// owner's connection closed (it notices asynchronously): at most 2 s.
func reattach(_ daemon: DaemonHarness, _ identifier: String, delegate: (any SessionDelegate)? = nil) async throws -> Session {
    var refusal: (any Error)?
    return try await eventually("ferryd to let a new owner make \(identifier)", timeout: .seconds(2), every: .milliseconds(40),
                                observed: "refused with \(refusal.map { "\($0)" } ?? "nothing")") {
        do { return try Session.background(daemon.configuration(identifier), delegate: delegate) } catch { refusal = error; return nil }
    }
}

func withDaemonAndServer(_ body: (DaemonHarness, TestHTTPServer) async throws -> Void) async throws {
    let daemon = try await DaemonHarness.start()
    defer { daemon.stop() }
    try await withServer { server in try await body(daemon, server) }
}


/// Which tasks a session's delegate was told had completed, in order.
final class CompletionsByTask: SessionDelegate, @unchecked Sendable {  // state behind the lock
    private let lock = NSLock()
    private var completions: [Int] = []
    let completed = AsyncStream<Int>.makeStream()
    var tasks: [Int] { lock.withLock { completions } }
    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        lock.withLock { completions.append(task.taskIdentifier) }
        completed.continuation.yield(task.taskIdentifier)
    }
}

extension Configuration {
    /// The configuration with `storage` for its cookies.
    fileprivate func with(_ storage: HTTPCookieStorage) -> Configuration {
        var configuration = self
        configuration.httpCookieStorage = storage
        return configuration
    }
}

/// Records each task's metrics interval and when its completion was heard of.
private final class IntervalDelegate: SessionDelegate, @unchecked Sendable {  // state behind `lock`
    private let lock = NSLock()
    private var interval: DateInterval?
    private let heard = AsyncStream<(DateInterval, Date)>.makeStream()

    func next() async -> (DateInterval, Date)? {
        for await value in heard.stream { return value }
        return nil
    }

    func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {
        lock.withLock { interval = metrics.taskInterval }
    }

    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        let now = Date()
        if let interval = lock.withLock({ interval }) { heard.continuation.yield((interval, now)) }
    }
}
