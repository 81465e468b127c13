import Ferry
import FerryTestSupport
import Foundation
import Testing

/// `allTasks` of a background session made again in a new process (here: a new session
/// object after the first was invalidated): what ferryd still carries, as it is; nothing it
/// already delivered.
@Suite("allTasks after a relaunch", .serialized)
struct BackgroundAllTasksTests {
    @Test("a task whose completion was delivered is gone; one waiting for its begin date is listed, running, with its description")
    func deliveredTasksAreGone() async throws {
        try await withDaemonAndServer { daemon, server in
            let delegate = RecordingDelegate()
            let first = try Session.background(daemon.configuration("bg.alltasks"), delegate: delegate)
            let done = first.dataTask(with: Request(url: server.url("/bytes/10")))
            done.taskDescription = "done"
            done.resume()
            let later = first.downloadTask(with: Request(url: server.url("/bytes/1000")))
            later.taskDescription = "later"
            later.earliestBeginDate = Date().addingTimeInterval(86_400)
            later.resume()
            #expect(succeeded(await delegate.nextCompletion()))
            // The completion is acknowledged after the delegate returned: wait until ferryd has it.
            try await poll(until: "ferryd to hold no undelivered event", timeout: .seconds(10), every: .milliseconds(50)) {
                let status = try await runFerry(["daemon", "status", "--json"], environment: daemon.environment)
                let json = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
                return json?["undeliveredEventCount"] as? Int == 0
            }
            first.finishTasksAndInvalidate()

            let again = try await reattach(daemon, "bg.alltasks", delegate: RecordingDelegate())
            let listed = again.allTasks
            #expect(listed.map(\.taskIdentifier) == [later.taskIdentifier], "listed: \(listed.map { ($0.taskIdentifier, $0.taskDescription ?? "-") })")
            #expect(listed.first?.taskDescription == "later")
            #expect(listed.first?.state == .running)
            #expect(listed.first?.earliestBeginDate != nil)
            #expect(listed.first?.waitingReason?.kind == .beginDate, "a waiting task says what it waits for")
            again.invalidateAndCancel()
        }
    }

    @Test("URLSession's spelling in the background: a relaunched session's delegate gets the completion stored while the app was away, with its task's description")
    func urlSessionRelaunch() async throws {
        try await withDaemonAndServer { daemon, server in
            let configuration = URLSessionConfiguration(daemon.configuration("bg.urlsession"))
            let first = URLSession(configuration: configuration, delegate: nil, delegateQueue: nil)
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "PUT"
            let upload = first.uploadTask(with: request, from: Data(repeating: 3, count: 2048))
            upload.taskDescription = "sent while the app was away"
            upload.resume()
            first.finishTasksAndInvalidate()  // the completion waits in ferryd for the next process
            try await poll(until: "ferryd to hold the completion", timeout: .seconds(20), every: .milliseconds(50)) {
                let status = try await runFerry(["daemon", "status", "--json"], environment: daemon.environment)
                let json = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
                return (json?["undeliveredEventCount"] as? Int ?? 0) > 0
            }
            let uploads = Uploads()
            let relaunched = try await eventually("a new owner of bg.urlsession", timeout: .seconds(5), every: .milliseconds(50)) { () -> URLSession? in
                let made = URLSession(configuration: configuration, delegate: uploads, delegateQueue: nil)
                if made.session.backgroundConnectionError == nil { return made }
                made.invalidateAndCancel()
                return nil
            }
            try await poll(until: "the stored completion to reach the URLSession delegate", timeout: .seconds(20)) { uploads.completed.count == 1 }
            #expect(uploads.completed.first?.taskIdentifier == upload.taskIdentifier)
            #expect(uploads.completed.first?.taskDescription == "sent while the app was away")
            #expect(uploads.errors.first.map { $0 == nil } == true)
            relaunched.invalidateAndCancel()
        }
    }

    @Test("a task backing off after a failed attempt says so in a relaunched allTasks, with when it tries next and its byte counts")
    func waitingTasksSaySo() async throws {
        try await withDaemonAndServer { daemon, server in
            var configuration = daemon.configuration("bg.alltasks.waiting")
            configuration.retryPolicy = .untilResourceTimeout
            let first = try Session.background(configuration, delegate: RecordingDelegate())
            // Nobody listens on port 9: each attempt is refused, and ferryd backs off.
            var request = Request(url: URL(string: "http://127.0.0.1:9/photo.jpg")!, method: "PUT")
            request.headers["Content-Type"] = "image/jpeg"
            let upload = first.uploadTask(with: request, from: Data(repeating: 7, count: 4096))
            upload.taskDescription = "photo for the club"
            upload.resume()
            try await poll(until: "ferryd to back off after the refused attempt", timeout: .seconds(20), every: .milliseconds(100)) {
                let explained = try await runFerry(["explain", "\(upload.taskIdentifier)", "--session", "bg.alltasks.waiting"], environment: daemon.environment)
                return explained.output.lowercased().contains("back")
            }
            first.finishTasksAndInvalidate()

            let again = try await reattach(daemon, "bg.alltasks.waiting", delegate: RecordingDelegate())
            let listed = try #require(again.allTasks.first { $0.taskIdentifier == upload.taskIdentifier })
            #expect(listed.taskDescription == "photo for the club")
            #expect(listed.countOfBytesExpectedToSend == 4096)
            let waiting = try #require(listed.waitingReason, "the task says it waits")
            #expect(waiting.kind == .backingOff, "\(waiting)")
            #expect(waiting.until.map { $0 > Date().addingTimeInterval(-1) } == true, "with when it tries next: \(waiting)")
            #expect(!waiting.message.isEmpty)
            again.invalidateAndCancel()
            _ = server
        }
    }
}
