import FerryCore
import FerryDaemon
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// Time-driven rules with the manual clock: nothing here sleeps for the times it tests.
@Suite("Scheduling: Retry-After, backoff, begin dates, limits (manual clock)", .serialized)
struct SchedulingTests {
    @Test("503 with Retry-After 30: no request before 30 s on the clock, then the task completes")
    func retryAfter() async throws {
        let ferryd = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        let t0 = ferryd.clock.now
        let task = try await client.submit(TaskSubmission(
            sessionIdentifier: "s", kind: .data,
            request: TaskRequest(url: URL(string: server.baseURL + "/flaky/a?failures=1&status=503&retryAfter=30&then=/bytes/100")!)))
        try await poll(until: "the 503 is stored as a retry") {
            try await client.task("s", task.taskIdentifier).reasonKind == .retryAfter
        }
        let waiting = try await client.task("s", task.taskIdentifier)
        #expect(waiting.nextAttemptDate == t0.addingTimeInterval(30))
        #expect(waiting.waitingReason?.until == t0.addingTimeInterval(30))
        #expect(waiting.lastError?.code.rawValue == "http503")
        #expect(server.requests.count == 1)

        // The scheduler sleeps until exactly the Retry-After time, so moving the clock to 0.1 s
        // before it wakes nobody: no request can go out.
        try await poll(until: "the scheduler to sleep until the Retry-After time", observed: "it sleeps until \(String(describing: ferryd.clock.nextDeadline))") {
            ferryd.clock.nextDeadline == t0.addingTimeInterval(30)
        }
        ferryd.clock.advance(by: 29.9)
        #expect(ferryd.clock.nextDeadline == t0.addingTimeInterval(30), "something woke before Retry-After")
        #expect(server.requests.count == 1, "a request went out before Retry-After")
        ferryd.clock.advance(by: 0.1)
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        #expect(events.map(\.kind.name) == ["response", "data", "completed"])
        #expect(server.requests.count == 2)
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a lost connection is retried with exponential backoff and jitter, and given up at the resource time-out")
    func backoffUntilResourceTimeout() async throws {
        let ferryd = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        var submission = TaskSubmission(sessionIdentifier: "s", kind: .data, request: TaskRequest(url: URL(string: server.baseURL + "/close-immediately")!))
        submission.timeoutIntervalForResource = 10
        let task = try await client.submit(submission)
        var waits: [TimeInterval] = []
        for attempt in 1...3 {
            try await poll(until: "attempt \(attempt) fails and backs off") {
                let info = try await client.task("s", task.taskIdentifier)
                return info.attemptCount == attempt && info.reasonKind == .backingOff
            }
            let info = try await client.task("s", task.taskIdentifier)
            let wait = try #require(info.nextAttemptDate).timeIntervalSince(ferryd.clock.now)
            waits.append(wait)
            #expect(info.lastError?.code.rawValue == "networkConnectionLost")
            #expect(server.requests.count == attempt)
            ferryd.clock.advance(by: wait)
        }
        // 1 s × 2ⁿ⁻¹, times 0.5…1.
        #expect(waits[0] >= 0.5 && waits[0] <= 1)
        #expect(waits[1] >= 1 && waits[1] <= 2)
        #expect(waits[2] >= 2 && waits[2] <= 4)
        // Keep failing until the next wait would pass the 10 s resource time-out.
        var info = try await client.task("s", task.taskIdentifier)
        try await poll(until: "the task to fail at the resource time-out", timeout: .seconds(5), every: .milliseconds(100),
                       observed: "state \(info.state), attempt \(info.attemptCount), next attempt at \(String(describing: info.nextAttemptDate))") {
            info = try await client.task("s", task.taskIdentifier)
            if info.state == .failed { return true }
            if let next = info.nextAttemptDate { ferryd.clock.advance(to: next) }
            return false
        }
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        guard case .failed(let failure) = events.last?.kind else { throw TestFailure("not failed: \(events)") }
        #expect(failure.code == "timedOut")
        #expect(failure.message.contains("timeoutIntervalForResource"))
        #expect(ferryd.clock.now.timeIntervalSince(Date(timeIntervalSince1970: 1_800_000_000)) <= 10)
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a POST whose connection broke after it was sent is not sent again: it fails")
    func postNotRepeated() async throws {
        let ferryd = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        let body = try makeFile(ferryd.root, "small.bin", count: 100_000, seed: 1)
        let task = try await client.submit(.upload("s", server.baseURL + "/upload?dropAfter=50000", file: body, method: "POST"))
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        guard case .failed(let failure) = events.last?.kind else { throw TestFailure("not failed: \(events)") }
        #expect(failure.message.contains("not sent again"))
        #expect(server.requests.filter { $0.method == "POST" }.count == 1)
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a task waits for its begin date, and says so")
    func beginDate() async throws {
        let ferryd = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        var submission = TaskSubmission.download("s", server.baseURL + "/bytes/1000")
        submission.earliestBeginDate = ferryd.clock.now.addingTimeInterval(3600)
        let task = try await client.submit(submission)
        #expect(task.waitingReason?.kind == .beginDate)
        #expect(task.waitingReason?.until == submission.earliestBeginDate)
        // Asleep until the begin date, with the task still waiting for it: nothing went out.
        try await poll(until: "the scheduler to sleep until the begin date", observed: "it sleeps until \(String(describing: ferryd.clock.nextDeadline))") {
            ferryd.clock.nextDeadline == submission.earliestBeginDate
        }
        #expect(try await client.task("s", task.taskIdentifier).reasonKind == .beginDate)
        #expect(server.requests.isEmpty)
        ferryd.clock.advance(by: 3600)
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        #expect(events.last?.kind == .completed)
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("httpMaximumConnectionsPerHost 1: one transfer at a time to the host; the others say hostLimit")
    func perHostLimit() async throws {
        let ferryd = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s", perHost: 1))
        var ids: [Int] = []
        for i in 0..<3 {
            ids.append(try await client.submit(.download("s", server.baseURL + "/bytes/100000?seed=\(i)&drip=200000")).taskIdentifier)
        }
        try await poll(until: "one runs, two wait for the host") {
            let states = try await ids.asyncMap { try await client.task("s", $0) }
            return states.filter { $0.state == .running }.count == 1 && states.filter { $0.reasonKind == .hostLimit }.count == 2
        }
        let held = try await client.task("s", ids[2])
        #expect(held.waitingReason?.host == "127.0.0.1")
        _ = try await client.events(untilFinished: Set(ids))
        #expect(server.maxConcurrentConnections == 1)
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("suspend, resume (Range), cancel with resume data, and a new task from that resume data")
    func suspendResumeCancel() async throws {
        let ferryd = try await InProcessDaemon { $0.progressPersistInterval = 0.05 }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        let url = server.baseURL + "/bytes/400000?seed=9&drip=100000"
        let task = try await client.submit(.download("s", url))
        let reference = TaskReference(sessionIdentifier: "s", taskIdentifier: task.taskIdentifier)
        try await poll(until: "bytes arrive") { try await ferryd.task("s", task.taskIdentifier).bytesReceived > 50_000 }
        guard case .task(let suspended) = try await client.request(.suspend(reference)) else { throw TestFailure("no task") }
        #expect(suspended.state == .suspended && suspended.waitingReason?.kind == .suspended)
        guard case .task(let resumed) = try await client.request(.resume(reference)) else { throw TestFailure("no task") }
        #expect(resumed.state == .waiting)
        try await poll(until: "the resumed transfer asks for a range") {
            server.requests.count == 2 && server.requests[1].header("range") != nil
        }
        try await poll(until: "more bytes arrive") { try await ferryd.task("s", task.taskIdentifier).bytesReceived > 150_000 }
        guard case .resumeData(let cancelled) = try await client.request(.cancelProducingResumeData(reference)) else { throw TestFailure("no resume data") }
        #expect(cancelled.task.state == .cancelled)
        let resumeData = try #require(cancelled.resumeData)
        let token = try DownloadResumeToken.decode(resumeData)
        #expect(token.bytesReceived > 150_000 && FileManager.default.fileExists(atPath: token.partialFile))
        let cancelEvents = try await client.events(untilFinished: [task.taskIdentifier])
        guard case .failed(let failure) = cancelEvents.last?.kind else { throw TestFailure("no failed event") }
        #expect(failure.code == "cancelled" && failure.resumeData == resumeData)

        var again = TaskSubmission.download("s", url)
        again.resumeData = resumeData
        let continued = try await client.submit(again)
        let events = try await client.events(untilFinished: [continued.taskIdentifier])
        guard case .downloadFinished(let finished) = events.of(continued.taskIdentifier).first(where: { $0.kind.name == "downloadFinished" })?.kind
        else { throw TestFailure("no file") }
        #expect(try TestFiles.sha256Hex(ofFile: URL(fileURLWithPath: finished.location)) == TestContent.sha256Hex(count: 400_000, seed: 9))
        #expect(server.requests.last?.header("range") == "bytes=\(token.bytesReceived)-")
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("global limit 1: runnable tasks start by priority, the others say globalLimit")
    func priorityAndGlobalLimit() async throws {
        let ferryd = try await InProcessDaemon { $0.globalTaskLimit = 1 }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        var ids: [Double: Int] = [:]
        for priority in [0.1, 0.9, 0.5] {
            var submission = TaskSubmission.download("s", server.baseURL + "/bytes/50000?seed=\(Int(priority * 10))&drip=50000")
            submission.priority = priority
            submission.earliestBeginDate = ferryd.clock.now.addingTimeInterval(10)
            ids[priority] = try await client.submit(submission).taskIdentifier
        }
        ferryd.clock.advance(by: 10)
        try await poll(until: "the lowest priority waits for the limit") {
            try await client.task("s", ids[0.1]!).reasonKind == .globalLimit
        }
        _ = try await client.events(untilFinished: Set(ids.values))
        #expect(server.requests.map(\.path) == ["/bytes/50000", "/bytes/50000", "/bytes/50000"])
        #expect(server.requests.compactMap { $0.uri.split(separator: "seed=").last?.prefix(1) } == ["9", "5", "1"])
        #expect(server.maxConcurrentConnections == 1)
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("invalidate with cancelTasks cancels what has not finished and frees the session")
    func invalidateAndCancel() async throws {
        let ferryd = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        let slow = try await client.submit(.download("s", server.baseURL + "/bytes/400000?drip=50000"))
        var later = TaskSubmission.download("s", server.baseURL + "/bytes/10")
        later.earliestBeginDate = ferryd.clock.now.addingTimeInterval(600)
        let waiting = try await client.submit(later)
        try await poll(until: "the slow download runs") { try await ferryd.task("s", slow.taskIdentifier).state == .running }
        guard case .invalidated = try await client.request(.invalidate(Invalidate(sessionIdentifier: "s", cancelTasks: true))) else {
            throw TestFailure("not invalidated")
        }
        #expect(try await ferryd.task("s", slow.taskIdentifier).state == .cancelled)
        #expect(try await ferryd.task("s", waiting.taskIdentifier).state == .cancelled)
        let error = await #expect(throws: FerryProtocolError.self) {
            try await client.request(.acknowledge(Acknowledge(sessionIdentifier: "s", upToSequence: 1)))
        }
        #expect(error?.code == .notOwner)
        let next = try await ferryd.client("next")
        guard case .attached(let attached) = try await next.request(.attach("s")) else { throw TestFailure("no attach") }
        #expect(attached.owner && attached.tasks.allSatisfy { $0.state == .cancelled })
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a finished task whose events were acknowledged is forgotten after the retention, on the hourly clean-up")
    func retention() async throws {
        let ferryd = try await InProcessDaemon { $0.finishedTaskRetention = 60 }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        let task = try await client.submit(.download("s", server.baseURL + "/bytes/10"))
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        try await client.request(.acknowledge(Acknowledge(sessionIdentifier: "s", upToSequence: events.last!.sequence)))
        // The clean-up is hourly: the scheduler sleeps until an hour after it started, so
        // moving the clock 59 minutes wakes nobody, and the task is still stored.
        let cleanup = ferryd.clock.now.addingTimeInterval(3600)  // the clock has not moved since ferryd started
        try await poll(until: "the scheduler to sleep until the hourly clean-up", observed: "it sleeps until \(String(describing: ferryd.clock.nextDeadline))") {
            ferryd.clock.nextDeadline == cleanup
        }
        ferryd.clock.advance(by: 59 * 60)
        #expect(ferryd.clock.nextDeadline == cleanup, "something woke before the clean-up")
        #expect(try await ferryd.store.task(session: "s", task: task.taskIdentifier) != nil)
        ferryd.clock.advance(by: 60)
        try await poll(until: "the task is forgotten") {
            try await ferryd.store.task(session: "s", task: task.taskIdentifier) == nil
        }
        try await server.shutdown()
        await ferryd.shutdown()
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
