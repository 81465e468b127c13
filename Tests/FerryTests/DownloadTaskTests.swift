import Ferry
import FerryTestSupport
import Foundation
import Synchronization
import Logging
import Testing

@Suite("Download tasks: files, progress, pause and resume")
struct DownloadTaskTests {
    @Test("the file is handed over in didFinishDownloadingTo and deleted after it unless moved; the last progress call has the totals")
    func handOver() async throws {
        try await withServer { server in
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let delegate = RecordingDelegate()
            let kept = dir.appendingPathComponent("kept.bin")
            delegate.moveDownloadTo = kept
            var configuration = Configuration.default
            configuration.downloadDirectory = dir
            let session = Session(configuration: configuration, delegate: delegate)
            let size = 2 << 20
            session.downloadTask(with: server.url("/bytes/\(size)?seed=12")).resume()
            _ = await delegate.nextCompletion()
            #expect(delegate.finishedFileExisted == true)
            #expect(try sha256Hex(ofFile: kept) == TestContent.sha256Hex(count: size, seed: 12))
            let last = try #require(delegate.written.last)
            #expect(last.1 == Int64(size) && last.2 == Int64(size))
            #expect(delegate.log.suffix(2) == ["finished", "complete ok"])

            // Not moved: deleted after the callback.
            delegate.moveDownloadTo = nil
            session.downloadTask(with: server.url("/bytes/1000?seed=1")).resume()
            _ = await delegate.nextCompletion()
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".download") }
            #expect(leftovers.isEmpty)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("cancel(byProducingResumeData:) then downloadTask(withResumeData:) continues from the byte reached")
    func pauseAndResume() async throws {
        try await withServer { server in
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            var configuration = Configuration.default
            configuration.downloadDirectory = dir
            let size = 4 << 20
            let first = Session(configuration: configuration)
            let task = first.downloadTask(with: server.url("/bytes/\(size)?seed=31&drip=2000000"))
            task.resume()
            try await poll(until: "300,000 bytes of the download on disk", timeout: .seconds(30), observed: "\(task.countOfBytesReceived) bytes") {
                task.countOfBytesReceived >= 300_000
            }
            let resumeData = try #require(await task.cancelByProducingResumeData())
            #expect(task.error?.code == .cancelled)
            first.invalidateAndCancel()

            // A new session (as after a restart) continues it.
            let delegate = RecordingDelegate()
            let target = dir.appendingPathComponent("final.bin")
            delegate.moveDownloadTo = target
            let second = Session(configuration: configuration, delegate: delegate)
            second.downloadTask(withResumeData: resumeData).resume()
            _ = await delegate.nextCompletion()
            let resumedLine = try #require(delegate.log.first { $0.hasPrefix("resumed") })
            let offset = Int(resumedLine.split(separator: " ")[1]) ?? 0
            #expect(offset >= 300_000)
            #expect(try sha256Hex(ofFile: target) == TestContent.sha256Hex(count: size, seed: 31))
            let ranged = server.requests.filter { $0.header("Range") != nil }
            #expect(ranged.count == 1)
            #expect(ranged.first?.header("If-Range") != nil)
            second.finishTasksAndInvalidate()
        }
    }

    @Test("garbage resume data fails with cannotDecodeResumeData")
    func garbageResumeData() async throws {
        let session = Session(configuration: .ephemeral)
        for blob in [Data("hello".utf8), Data("FERRYRD\n{not json".utf8), Data("FERRYRD\n{\"version\": 99}".utf8)] {
            do {
                _ = try await session.download(resumeFrom: blob)
                Issue.record("expected an error")
            } catch let error as FerryError {
                #expect(error.code == .cannotDecodeResumeData)
                #expect(!error.message.isEmpty)
            }
        }
        session.invalidateAndCancel()
    }

    @Test("async download(for:) hands the file to the caller")
    func asyncDownload() async throws {
        try await withServer { server in
            let (file, response) = try await Session.shared.download(for: Request(url: server.url("/bytes/100000?seed=4")))
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(response.statusCode == 200)
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: 100_000, seed: 4))
        }
    }

    @Test("suspend pauses a download and resume continues it with a Range request")
    func suspendResume() async throws {
        try await withServer { server in
            let delegate = RecordingDelegate()
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let target = dir.appendingPathComponent("out.bin")
            delegate.moveDownloadTo = target
            let session = Session(configuration: .default, delegate: delegate)
            let size = 3 << 20
            let task = session.downloadTask(with: server.url("/bytes/\(size)?seed=40&drip=3000000"))
            task.resume()
            try await poll(until: "200,000 bytes of the download received", timeout: .seconds(30), observed: "\(task.countOfBytesReceived) bytes") {
                task.countOfBytesReceived >= 200_000
            }
            task.suspend()
            #expect(task.state == .suspended)
            try await Task.sleep(for: .milliseconds(100))
            task.resume()
            _ = await delegate.nextCompletion()
            #expect(try sha256Hex(ofFile: target) == TestContent.sha256Hex(count: size, seed: 40))
            #expect(server.requests.contains { $0.header("Range") != nil })
            session.finishTasksAndInvalidate()
        }
    }

    /// A download with a kept-alive connection at hand is carried on that connection's event
    /// loop without a task (the engine's `LoopTransfer`): suspend, resume and cancel with resume
    /// data reach it there as they reach a run in a task.
    @Test("on a kept-alive connection: suspend and resume continue with Range, and cancel produces resume data")
    func onAKeptAliveConnection() async throws {
        try await withServer { server in
            let delegate = RecordingDelegate()
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let target = dir.appendingPathComponent("out.bin")
            // The engine logs each request it sends, and where ("on": "loop" for these).
            let records = RecordingLogHandler.Records()
            let logger = Logger(label: "test.session") { _ in RecordingLogHandler(records, level: .debug) }
            let session = Session(configuration: .default, delegate: delegate, logger: logger)
            _ = try await session.download(for: Request(url: server.url("/bytes/10")))
            _ = await delegate.nextCompletion()  // the delegate hears of that one too
            #expect(server.totalConnections == 1)
            delegate.moveDownloadTo = target

            let size = 1 << 20  // the largest body written on the loop
            let task = session.downloadTask(with: server.url("/bytes/\(size)?seed=41&drip=1000000"))
            task.resume()
            try await poll(until: "200,000 bytes of the download received", timeout: .seconds(30), observed: "\(task.countOfBytesReceived) bytes") {
                task.countOfBytesReceived >= 200_000
            }
            let onLoop = { records.messages.filter { $0.message == "request" && $0.metadata["on"] == "loop" }.count }
            #expect(onLoop() == 1, "sent on the kept-alive connection's loop")
            task.suspend()
            #expect(task.state == .suspended)
            try await Task.sleep(for: .milliseconds(100))
            task.resume()
            _ = await delegate.nextCompletion()
            #expect(task.error == nil, "\(String(describing: task.error))")
            #expect(try sha256Hex(ofFile: target) == TestContent.sha256Hex(count: size, seed: 41))
            #expect(server.requests.filter { $0.header("Range") != nil }.count == 1)
            try FileManager.default.removeItem(at: target)

            let cancelled = session.downloadTask(with: server.url("/bytes/\(size)?seed=42&drip=1000000"))
            cancelled.resume()
            try await poll(until: "200,000 bytes of the second download received", timeout: .seconds(30), observed: "\(cancelled.countOfBytesReceived) bytes") {
                cancelled.countOfBytesReceived >= 200_000
            }
            #expect(onLoop() == 2, "the resumed one was not (it asks with Range); this one was")
            let resumeData = try #require(await cancelled.cancelByProducingResumeData())
            #expect(cancelled.error?.code == .cancelled)
            let heard = await delegate.nextCompletion()
            #expect(heard??.code == .cancelled, "the delegate hears of the cancel first: \(String(describing: heard))")
            session.downloadTask(withResumeData: resumeData).resume()
            _ = await delegate.nextCompletion()
            #expect(try sha256Hex(ofFile: target) == TestContent.sha256Hex(count: size, seed: 42))
            #expect(server.requests.filter { $0.header("Range") != nil }.count == 2)
            session.finishTasksAndInvalidate()
        }
    }

    /// Cancels that come at any moment of downloads carried on their connections' loops:
    /// before the request, with the head, mid-body, at the end. Each task completes once, the
    /// ones that ran on carry the whole file, and the host's slots all come back.
    @Test("cancels at any moment of downloads on kept-alive connections: each task completes once, and the host's slots come back")
    func cancelsAtAnyMoment() async throws {
        final class Outcomes: SessionDelegate, Sendable {
            let seen = Mutex<(completions: [Int: [FerryError.Code?]], sizes: [Int: Int64])>(([:], [:]))
            func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
                let size = (try? FileManager.default.attributesOfItem(atPath: location.path)[.size] as? Int64) ?? -1
                seen.withLock { $0.sizes[downloadTask.taskIdentifier] = size }
            }
            func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
                seen.withLock { $0.completions[task.taskIdentifier, default: []].append(error?.code) }
            }
        }
        try await withServer { server in
            let outcomes = Outcomes()
            let session = Session(configuration: .ephemeral, delegate: outcomes)
            _ = try await session.download(for: Request(url: server.url("/bytes/10")))
            let size = 20_000
            let tasks = (0..<120).map { i in session.downloadTask(with: server.url("/bytes/\(size)?seed=\(i)&drip=400000")) }
            for task in tasks { task.resume() }
            // Every other task is cancelled, at moments spread over the first 60 ms.
            for (i, task) in tasks.enumerated() where i % 2 == 0 {
                try await Task.sleep(for: .microseconds(i * 500))
                task.cancel()
            }
            try await poll(until: "all 121 tasks completed", timeout: .seconds(60), observed: "\(outcomes.seen.withLock { $0.completions.count })") {
                outcomes.seen.withLock { $0.completions.count } == 121
            }
            let seen = outcomes.seen.withLock { $0 }
            #expect(seen.completions.values.allSatisfy { $0.count == 1 }, "each task completes once")
            for (i, task) in tasks.enumerated() {
                let ended = seen.completions[task.taskIdentifier]?.first ?? .some(.unknown)
                if i % 2 == 1 {
                    #expect(ended == nil && seen.sizes[task.taskIdentifier] == Int64(size), "task \(i) ran on: \(String(describing: ended))")
                } else {
                    // Cancelled, or ended just before the cancel came.
                    #expect(ended == .cancelled || (ended == nil && seen.sizes[task.taskIdentifier] == Int64(size)), "task \(i): \(String(describing: ended))")
                }
            }
            // A slot kept by a cancelled run would hold this one back (6 per host).
            let (_, after) = try await session.download(for: Request(url: server.url("/bytes/10")))
            #expect(after.statusCode == 200)
            session.finishTasksAndInvalidate()
        }
    }
}
