import FerryCore
@testable import FerryEngine
import FerryTestSupport
import Foundation
import Synchronization
import Testing

/// A plain download carried on its connection's event loop (``LoopTransfer``): it ends there
/// when the answer is a final one written into the file, and goes on through the engine's
/// usual path, from the request that went out, whenever it needs more (a redirect, a retry,
/// the observer's decision, a failure). Each test first makes a kept-alive connection, since
/// only a transfer with an idle connection at hand is carried on a loop.
@Suite("Transfers carried on their connection's loop")
struct LoopTransferTests {
    /// Which way a run went.
    enum Path: Equatable {
        case notOnLoop, finishedOnLoop, stoppedOnLoop, handedOverWithResponse, handedOverWithFailure
    }

    /// Runs `transfer` as a session's in-process run does: its turn, then on a connection's
    /// loop when it qualifies (`whileOnLoop` gets it before it begins), going on in a task
    /// when the loop hands it over.
    func runLikeASession(
        _ engine: TransferEngine, _ transfer: Transfer, observer: any TransferObserver = AtOnceObserver(),
        whileOnLoop: (@Sendable (LoopTransfer) -> Void)? = nil
    ) async throws -> (Path, Result<TransferResult, FerryError>) {
        let url = transfer.request.url
        return try await withCheckedThrowingContinuation { (done: CheckedContinuation<(Path, Result<TransferResult, FerryError>), any Error>) in
            let inTask: @Sendable (Path, TransferTurn, FirstRequest?) -> Void = { path, turn, first in
                Task {
                    do {
                        done.resume(returning: (path, .success(try await engine.run(transfer, turn: turn, observer: observer, first: first, cancellingWith: {}))))
                    } catch {
                        done.resume(returning: (path, .failure(FerryError.from(error, url: url))))
                    }
                }
            }
            do {
                let turn = try engine.turn(for: transfer, observer: observer) { ready in
                    guard case .success(let turn) = ready else { return done.resume(throwing: TestFailure("the turn did not come: \(ready)")) }
                    let loop = engine.loopTransfer(transfer, turn: turn, observer: observer) { outcome in
                        switch outcome {
                        case .finished(let result): done.resume(returning: (.finishedOnLoop, .success(result)))
                        case .stopped(let error): done.resume(returning: (.stoppedOnLoop, .failure(error)))
                        case .continueInTask(let first):
                            if case .response = first.outcome { inTask(.handedOverWithResponse, turn, first) } else { inTask(.handedOverWithFailure, turn, first) }
                        }
                    }
                    guard let loop else { return inTask(.notOnLoop, turn, nil) }
                    whileOnLoop?(loop)
                    loop.begin()
                }
                turn.queue()
            } catch {
                done.resume(throwing: error)
            }
        }
    }

    /// One request, so that the engine keeps a connection to the server.
    func warm(_ engine: TransferEngine, _ server: TestHTTPServer) async throws {
        _ = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/1"))))
        server.resetStatistics()
    }

    /// Runs `body` with a server, an engine that keeps a connection to it (``warm(_:_:)``)
    /// unless `warmed` is false, and a file to download into.
    func withKeptConnection(warmed: Bool = true, _ body: (TestHTTPServer, TransferEngine, URL) async throws -> Void) async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await withServerAndEngine { server, engine in
            if warmed { try await warm(engine, server) }
            try await body(server, engine, dir.appendingPathComponent("out.bin"))
        }
    }

    /// The standard policy, waiting 50 ms before its first retry.
    static let quickRetries: RetryPolicy = {
        var policy = RetryPolicy.standard
        policy.initialDelay = .milliseconds(50)
        return policy
    }()

    /// The error a run ended with; nil when it succeeded.
    func failure(of result: Result<TransferResult, FerryError>) -> FerryError? {
        if case .failure(let error) = result { error } else { nil }
    }

    func download(_ server: TestHTTPServer, _ path: String, into file: URL, retry: RetryPolicy = .none) -> Transfer {
        Transfer(request: Request(url: url(server, path)), destination: .file(file, resume: nil), retry: retry)
    }

    @Test("a plain download on a kept-alive connection ends on the loop: the file, the totals, its metrics and progress")
    func endsOnTheLoop() async throws {
        let size = 300_000
        try await withKeptConnection { server, engine, file in
            let observer = AtOnceObserver()
            let (path, result) = try await runLikeASession(engine, download(server, "/bytes/\(size)?seed=11", into: file), observer: observer)
            #expect(path == .finishedOnLoop)
            let done = try result.get()
            #expect(done.response.statusCode == 200 && done.bytesReceived == Int64(size) && done.requestCount == 1)
            #expect(done.validator != nil, "the ETag, for a later resume")
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: size, seed: 11))
            #expect(observer.responses == [200], "taken at once, once")
            let transaction = try #require(observer.transactions.first)
            #expect(observer.transactions.count == 1 && transaction.connection?.isReused == true)
            #expect(transaction.countOfResponseBodyBytesReceived == Int64(size) && transaction.responseEndDate != nil)
            #expect(observer.written.last.map { $0.1 == Int64(size) && $0.2 == Int64(size) } == true, "the final totals: \(String(describing: observer.written.last))")
            #expect(server.requests.count == 1)
            #expect(engine.limiter.active(host: "127.0.0.1") == 0, "the host's slot went back")
        }
    }

    @Test("once ended, a loop transfer is not kept alive by its time-out watch or by whoever holds its stop")
    func releasedAtItsEnd() async throws {
        /// Holds the transfer's stop and is held by its `ended`, as a session's run handle is.
        final class Handle: Sendable {
            let loop = Mutex<LoopTransfer?>(nil)
        }
        final class Weak: Sendable {
            let loop = Mutex<(@Sendable () -> LoopTransfer?)?>(nil)
        }
        try await withKeptConnection { server, engine, file in
            let transfer = download(server, "/bytes/100", into: file)
            let weak = Weak()
            let ended: TransferResult = try await withCheckedThrowingContinuation { done in
                do {
                    let turn = try engine.turn(for: transfer, observer: AtOnceObserver()) { ready in
                        let handle = Handle()  // held by the transfer's `ended` alone from here
                        guard case .success(let turn) = ready,
                            let loop = engine.loopTransfer(transfer, turn: turn, observer: AtOnceObserver(), ended: { outcome in
                                _ = handle
                                guard case .finished(let result) = outcome else { return done.resume(throwing: TestFailure("ended \(outcome)")) }
                                done.resume(returning: result)
                            })
                        else { return done.resume(throwing: TestFailure("not on the loop")) }
                        handle.loop.withLock { $0 = loop }
                        weak.loop.withLock { $0 = { [weak loop] in loop } }
                        loop.begin()
                    }
                    turn.queue()
                } catch {
                    done.resume(throwing: error)
                }
            }
            #expect(ended.bytesReceived == 100)
            try await poll(until: "the ended loop transfer released", timeout: .seconds(5), observed: "still alive") {
                weak.loop.withLock { $0?() } == nil
            }
        }
    }

    @Test("an error status is a final answer too: its body is the file, as a download task's")
    func errorStatusEndsOnTheLoop() async throws {
        try await withKeptConnection { server, engine, file in
            let (path, result) = try await runLikeASession(engine, download(server, "/status/404", into: file))
            #expect(path == .finishedOnLoop)
            #expect(try result.get().response.statusCode == 404)
            #expect(try String(contentsOf: file, encoding: .utf8) == "status 404\n")
        }
    }

    @Test("without an idle connection, or for a resumed download, the transfer runs in a task as before")
    func notOnTheLoop() async throws {
        try await withKeptConnection(warmed: false) { server, engine, file in
            let (cold, coldResult) = try await runLikeASession(engine, download(server, "/bytes/10", into: file))
            let coldBytes = try coldResult.get().bytesReceived
            #expect(cold == .notOnLoop && coldBytes == 10, "no connection was open yet")
            var resumed = download(server, "/bytes/10", into: file)
            resumed.destination = .file(file, resume: ResumePoint(offset: 5, validator: "\"x\""))
            let (path, _) = try await runLikeASession(engine, resumed)
            #expect(path == .notOnLoop, "a resume asks with Range, which the task's path does")
        }
    }

    @Test("a redirect goes on in a task from the response that came: the first request is not sent again")
    func redirectHandedOver() async throws {
        try await withKeptConnection { server, engine, file in
            let observer = AtOnceObserver()
            let (path, result) = try await runLikeASession(engine, download(server, "/redirect/1?to=/bytes/10", into: file), observer: observer)
            #expect(path == .handedOverWithResponse)
            let done = try result.get()
            #expect(done.response.statusCode == 200 && done.bytesReceived == 10 && done.requestCount == 2)
            #expect(server.requests.map(\.path) == ["/redirect/1", "/bytes/10"])
            #expect(engine.limiter.active(host: "127.0.0.1") == 0, "the slot the task took over went back once")
            #expect(observer.transactions.count == 2 && observer.transactions.first?.response?.statusCode == 302)
            #expect(observer.responses == [200], "the final response, once")
        }
    }

    @Test("stopped before it began (its run's handle was stopped already): it ends as cancelled, nothing is sent, the slot goes back")
    func stoppedBeforeItBegan() async throws {
        try await withKeptConnection { server, engine, file in
            let (path, result) = try await runLikeASession(engine, download(server, "/bytes/10", into: file)) { loop in loop.stop() }
            #expect(path == .stoppedOnLoop)
            let error = try #require(failure(of: result), "stopped, yet it succeeded")
            #expect(error.code == .cancelled)
            #expect(server.requests.isEmpty && engine.limiter.active(host: "127.0.0.1") == 0)
        }
    }

    @Test("a disk that fills mid-body: the task's rules decide, and the error says so; a file that cannot be opened leaves the transfer to the task")
    func fileErrors() async throws {
        try await withKeptConnection { server, engine, _ in
            // /dev/full opens and takes no byte: every write fails with ENOSPC.
            let full = URL(fileURLWithPath: "/dev/full")
            let (path, result) = try await runLikeASession(engine, download(server, "/bytes/50000", into: full))
            #expect(path == .handedOverWithFailure)
            let error = try #require(failure(of: result), "the disk was full, yet it succeeded")
            #expect(error.code == .cannotWriteToFile && error.message.contains("the disk is full"), "\(error)")
            #expect(engine.limiter.active(host: "127.0.0.1") == 0)

            try await warm(engine, server)
            let nowhere = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/out.bin")
            let (unopened, unopenedResult) = try await runLikeASession(engine, download(server, "/bytes/10", into: nowhere))
            #expect(unopened == .notOnLoop)
            let cannotCreate = try #require(failure(of: unopenedResult), "no folder, yet it succeeded")
            #expect(cannotCreate.code == .cannotWriteToFile)
            #expect(server.requests.isEmpty, "nothing sent for a file that cannot be made")
        }
    }

    @Test("a response that closes its connection ends on the loop too; the next transfer opens another")
    func connectionClose() async throws {
        try await withKeptConnection { server, engine, file in
            var transfer = download(server, "/bytes/100", into: file)
            transfer.request.headers["Connection"] = "close"
            let (path, result) = try await runLikeASession(engine, transfer)
            let bytes = try result.get().bytesReceived
            #expect(path == .finishedOnLoop && bytes == 100)
            let (next, nextResult) = try await runLikeASession(engine, download(server, "/bytes/10", into: file))
            let nextBytes = try nextResult.get().bytesReceived
            #expect(next == .notOnLoop && nextBytes == 10, "no idle connection was left")
        }
    }

    @Test("a body over 1 MiB, or of unknown length, is read in a task, not on the loop its connection shares")
    func largeBodyHandedOver() async throws {
        try await withKeptConnection { server, engine, file in
            let size = Int(LoopTransfer.largestBodyOnLoop) + 1
            let (path, result) = try await runLikeASession(engine, download(server, "/bytes/\(size)?seed=12", into: file))
            #expect(path == .handedOverWithResponse)
            #expect(try result.get().bytesReceived == Int64(size))
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: size, seed: 12))
            let (chunked, _) = try await runLikeASession(engine, download(server, "/bytes/100?chunked=1", into: file))
            #expect(chunked == .handedOverWithResponse)
            #expect(server.requests.count == 2)
        }
    }

    @Test("a status the retry policy retries goes on in a task, which waits and sends again")
    func retryableStatusHandedOver() async throws {
        try await withKeptConnection { server, engine, file in
            let (path, result) = try await runLikeASession(engine, download(server, "/flaky/loop503?failures=1&then=/bytes/50", into: file, retry: Self.quickRetries))
            #expect(path == .handedOverWithResponse)
            #expect(try result.get().response.statusCode == 200)
            #expect(try Data(contentsOf: file).count == 50)
            #expect(server.requests.count == 2)
        }
    }

    @Test("a kept-alive connection that the server closed before answering: the request goes again at once, in a task")
    func closedBeforeAnswerHandedOver() async throws {
        try await withKeptConnection { server, engine, file in
            let (path, result) = try await runLikeASession(engine, download(server, "/flaky/loopclose?failures=1&status=close&then=/bytes/50", into: file))
            #expect(path == .handedOverWithFailure)
            let done = try result.get()
            #expect(done.response.statusCode == 200 && done.requestCount == 2)
            #expect(server.requests.count == 2)
        }
    }

    @Test("a body cut short: the task's retry asks for the rest with Range, from what the file holds")
    func cutShortResumes() async throws {
        let size = 1 << 20
        try await withKeptConnection { server, engine, file in
            let (path, result) = try await runLikeASession(engine, download(server, "/bytes/\(size)?seed=4&dropAfter=300000", into: file, retry: Self.quickRetries))
            #expect(path == .handedOverWithFailure)
            #expect(try result.get().response.statusCode == 206)
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: size, seed: 4))
            #expect(server.requests.filter { $0.header("Range") != nil }.count == 1)
        }
    }

    @Test("an observer that must be asked about the response is asked in a task, once; one that refuses at once ends the transfer")
    func observerDecisions() async throws {
        try await withKeptConnection { server, engine, file in
            let asking = AtOnceObserver(answer: nil)
            let (path, result) = try await runLikeASession(engine, download(server, "/bytes/20", into: file), observer: asking)
            let bytes = try result.get().bytesReceived
            #expect(path == .handedOverWithResponse && bytes == 20)
            #expect(asking.responses == [200] && asking.askedAtOnce == 1, "asked at once (nil), then awaited: \(asking.responses)")

            try await warm(engine, server)
            let refusing = AtOnceObserver(answer: false)
            let (refused, refusal) = try await runLikeASession(engine, download(server, "/bytes/20", into: file), observer: refusing)
            #expect(refused == .handedOverWithFailure)
            let error = try #require(failure(of: refusal), "refused, yet it succeeded")
            #expect(error.code == .cancelledByDelegate)
        }
    }

    @Test("stopped on the loop (a cancel) it ends as cancelled and gives its slot back; a stall ends it with the request time-out")
    func stoppedOnTheLoop() async throws {
        try await withKeptConnection { server, engine, file in
            let stalled = "/bytes/100000?stallAfter=1000&stallSeconds=2"
            let (path, result) = try await runLikeASession(engine, download(server, stalled, into: file)) { loop in
                Task {
                    try await Task.sleep(for: .milliseconds(300))
                    loop.stop()
                }
            }
            #expect(path == .stoppedOnLoop)
            let error = try #require(failure(of: result), "stopped, yet it succeeded")
            #expect(error.code == .cancelled)
            #expect(engine.limiter.active(host: "127.0.0.1") == 0)

            try await warm(engine, server)
            var impatient = download(server, stalled, into: file)
            impatient.idleTimeout = 0.4
            let (timedOutPath, timedOut) = try await runLikeASession(engine, impatient)
            #expect(timedOutPath == .stoppedOnLoop)
            let timeOut = try #require(failure(of: timedOut), "stalled, yet it succeeded")
            #expect(timeOut.code == .timedOut)
            #expect(engine.limiter.active(host: "127.0.0.1") == 0)
        }
    }
}

/// An observer that takes responses at once (`answer`, or asks to be awaited with nil), and
/// records them, the requests' metrics and the progress.
final class AtOnceObserver: TransferObserver, Sendable {
    private struct Seen {
        var responses: [Int] = []
        var askedAtOnce = 0
        var transactions: [TransactionMetrics] = []
        var written: [(Int64, Int64, Int64)] = []
    }
    private let seen = Mutex(Seen())
    let answer: Bool?

    init(answer: Bool? = true) {
        self.answer = answer
    }

    var responses: [Int] { seen.withLock { $0.responses } }
    var askedAtOnce: Int { seen.withLock { $0.askedAtOnce } }
    var transactions: [TransactionMetrics] { seen.withLock { $0.transactions } }
    var written: [(Int64, Int64, Int64)] { seen.withLock { $0.written } }

    func transferDidReceiveAtOnce(response: Response) -> Bool? {
        seen.withLock {
            $0.askedAtOnce += 1
            if answer != nil { $0.responses.append(response.statusCode) }
        }
        return answer
    }
    func transferDidReceive(response: Response) async -> Bool {
        seen.withLock { $0.responses.append(response.statusCode) }
        return answer ?? true
    }
    func transferDidFinish(transaction: TransactionMetrics) {
        seen.withLock { $0.transactions.append(transaction) }
    }
    func transferDidWrite(bytes: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        seen.withLock { $0.written.append((bytes, totalBytesWritten, totalBytesExpectedToWrite)) }
    }
}
