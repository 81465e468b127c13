import FerryApps
import FerryCore
@testable import FerryDaemon
import FerryEngine
import FerryProtocol
@testable import FerryStore
import Foundation
import Testing

/// The pure rules behind scheduling: the task's side of the retry rulebook (FerryCoreTests
/// has the table itself), relaunch delays, and which paths a client may name.
@Suite("ferryd's retry context, launch backoff, container paths")
struct RulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A stored task as the scheduler sees it after `attempts` attempts.
    func record(method: String, policy: RetryPolicy? = nil, attempts: Int = 1, uploadResource: String? = nil) -> TaskRecord {
        var record = NewTask(
            sessionIdentifier: "s",
            task: TaskDescription(
                kind: .upload, request: TaskRequest(url: URL(string: "http://127.0.0.1/x")!, method: method), bodyFile: "/b",
                options: TaskOptions(retryPolicy: policy)))
            .record(identifier: 1, now: now)
        record.attemptCount = attempts
        record.uploadResourceURL = uploadResource
        return record
    }

    @Test("ferryd's side of the rulebook: the task's own policy, or ferryd's default (attempts until the deadline)")
    func policyOfTheTask() {
        let week = now.addingTimeInterval(7 * 86_400)
        let own = RetryContext(record(method: "GET", policy: RetryPolicy(maximumAttempts: 2), attempts: 2), defaultPolicy: .untilResourceTimeout, deadline: week)
        guard case .fail = own.decide(.brokenAfterSending, now: now) else { Issue.record("the task's policy allowed 2 attempts"); return }
        let fallback = RetryContext(record(method: "GET", attempts: 40), defaultPolicy: .untilResourceTimeout, deadline: week)
        #expect(fallback.decide(.brokenAfterSending, now: now, random: 1) == .retryAfter(.seconds(600), because: .backoff, reason: "the exchange broke"))
    }

    @Test("ferryd never resends at once, and a POST with a stored upload resource continues from the server's offset")
    func noImmediateResend() {
        let week = now.addingTimeInterval(7 * 86_400)
        let get = RetryContext(record(method: "GET"), defaultPolicy: .untilResourceTimeout, deadline: week)
        guard case .retryAfter = get.decide(.closedBeforeResponse, now: now) else { Issue.record("ferryd schedules instead"); return }
        let post = RetryContext(record(method: "POST", uploadResource: "http://127.0.0.1/upload/1"), defaultPolicy: .untilResourceTimeout, deadline: week)
        guard case .resume = post.decide(.brokenAfterSending, now: now) else { Issue.record("a stored resource resumes"); return }
    }

    @Test("no retry after the resource deadline")
    func deadline() {
        let context = RetryContext(record(method: "GET"), defaultPolicy: .untilResourceTimeout, deadline: now + 60)
        guard case .outOfTime(let message) = context.decide(.answered(status: 503, retryAfter: .seconds(120)), now: now) else {
            Issue.record("not out of time"); return
        }
        #expect(message.contains("timeoutIntervalForResource"))
    }

    @Test("relaunch waits 10 s, 20 s, 40 s… up to an hour")
    func launchDelays() {
        #expect((1...5).map { LaunchState.delay(afterAttempts: $0) } == [10, 20, 40, 80, 160])
        #expect(LaunchState.delay(afterAttempts: 30) == 3600)
    }

    @Test("a path is inside a container only without escaping it", arguments: [
        ("/data/groups/g/downloads/a.bin", true),
        ("/data/groups/g/../h/a.bin", false),
        ("/data/groups/gh/a.bin", false),
        ("/data/groups/g", false),
        ("/etc/passwd", false),
    ])
    func inside(path: String, expected: Bool) {
        #expect(Daemon.isInside(path, URL(fileURLWithPath: "/data/groups/g", isDirectory: true)) == expected)
    }

    @Test("identifiers become one file name")
    func pathSafe() {
        #expect(FerryPaths.fileName("../../etc") == "_._.._etc")
        #expect(FerryPaths.fileName("..") == "_.")
        #expect(FerryPaths.fileName("a/b\0c") == "a_b_c")
        #expect(FerryPaths.fileName("") == "_")
        #expect(FerryPaths.fileName("com.example.app") == "com.example.app")
    }
}
