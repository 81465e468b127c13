@testable import Ferry
import FerryTestSupport
import Foundation
import Testing

/// Tasks that no code of the app's hears of (no delegate, no completion handler) complete
/// without the delegate queue's turn; what they leave behind is what the queue's way left.
/// And the run's task, which suspend and cancel cancel.
@Suite("Completion without delegate or handler; the run's task")
struct QuietCompletionTests {
    /// A session without delegate whose downloads go to a folder of their own, removed after.
    func withQuietSession(_ body: (TestHTTPServer, Session, URL) async throws -> Void) async throws {
        try await withServer { server in
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            var configuration = Configuration.default
            configuration.downloadDirectory = dir
            let session = Session(configuration: configuration)
            try await body(server, session, dir)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a download task without delegate or handler: its waiters resume, its events end, its file is gone")
    func downloadWithoutListeners() async throws {
        try await withQuietSession { server, session, dir in
            let task = session.downloadTask(with: server.url("/bytes/5000?seed=3"))
            let events = task.events
            task.resume()
            await task.waitUntilCompleted()
            #expect(task.error == nil)
            #expect(task.state == .completed)
            var last: TaskEvent?
            for await event in events { last = event }
            guard case .completed(nil)? = last else {
                Issue.record("the last event is \(String(describing: last)), not a completion without error")
                return
            }
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            #expect(files.isEmpty, "nobody took the file: it is deleted, as after a delegate's callback")
        }
    }

    @Test("download(for:) keeps the file for the caller; data(for:) and upload(for:from:) return the body")
    func asyncCallsKeepWhatTheyReturn() async throws {
        try await withQuietSession { server, session, _ in
            let (file, response) = try await session.download(for: Request(url: server.url("/bytes/4000?seed=4")))
            #expect(response.statusCode == 200)
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: 4000, seed: 4))
            let (data, _) = try await session.data(for: Request(url: server.url("/bytes/3000?seed=5")))
            #expect(data == Data(TestContent.bytes(count: 3000, seed: 5)))
            var post = Request(url: server.url("/upload/quiet"))
            post.method = "POST"
            let body = Data("twelve bytes".utf8)
            let (answer, _) = try await session.upload(for: post, from: body)
            #expect(String(decoding: answer, as: UTF8.self).contains(#""sha256":"\#(sha256Hex(body))""#))
        }
    }

    @Test("RunHandle: a stop after the task arrived cancels it; a stop before it arrived cancels it as it arrives")
    func runHandle() async {
        let running = CancellationProbe()
        let handle = RunHandle()
        let task = Task { await running.work() }
        handle.attach(task)
        handle.stop()
        await task.value
        #expect(running.wasCancelled)

        let early = CancellationProbe()
        let stoppedFirst = RunHandle()
        stoppedFirst.stop()
        let late = Task { await early.work() }
        stoppedFirst.attach(late)
        await late.value
        #expect(early.wasCancelled)
    }
}
