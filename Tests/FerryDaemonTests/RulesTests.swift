import FerryApps
@testable import FerryDaemon
import FerryEngine
import FerryProtocol
import FerryStore
import Foundation
import Testing

/// The pure rules behind scheduling: which failures are retried, when, and which paths a
/// client may name.
@Suite("Retry rules, launch backoff, container paths")
struct RulesTests {
    let rules = RetryRules(initialDelay: 1, maximumDelay: 600)
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    var week: Date { now.addingTimeInterval(7 * 86_400) }

    @Test("Retry-After is waited exactly, for any method; without it, backoff")
    func retryAfter() {
        let busy = FerryError(.cancelledByDelegate, "503")
        #expect(rules.decide(
            error: busy, hint: RetryHint(statusCode: 503, retryAfter: .seconds(2)), method: "POST", resumableUpload: false,
            failures: 1, now: now, deadline: week) == .retry(at: now + 2, reason: .retryAfter, code: "http503", message: "HTTP 503 with Retry-After 2 s"))
        guard case .retry(let at, .backoff, "http429", _) = rules.decide(
            error: busy, hint: RetryHint(statusCode: 429, retryAfter: nil), method: "GET", resumableUpload: false,
            failures: 3, now: now, deadline: week, random: 1)
        else { Issue.record("not a backoff retry"); return }
        #expect(at == now + 4)
    }

    @Test("network failures: retried when repeating is safe, a sent POST fails", arguments: [
        ("GET", false, FerryError.Code.networkConnectionLost, true),
        ("PUT", false, .timedOut, true),
        ("POST", true, .networkConnectionLost, true),  // resumable upload: continue from the offset
        ("POST", false, .cannotConnectToHost, true),  // nothing was sent
        ("POST", false, .networkConnectionLost, false),
        ("PATCH", false, .timedOut, false),
        ("GET", false, .cannotWriteToFile, false),  // not a network failure
    ])
    func networkFailures(method: String, resumable: Bool, code: FerryError.Code, retried: Bool) {
        let decision = rules.decide(
            error: FerryError(code, "x"), hint: nil, method: method, resumableUpload: resumable, failures: 1, now: now, deadline: week)
        if case .retry = decision { #expect(retried) } else { #expect(!retried) }
    }

    @Test("backoff doubles from 1 s, is capped, and jitters between half and all of it")
    func backoffCurve() {
        #expect(rules.backoff(afterFailures: 1, random: 1) == 1)
        #expect(rules.backoff(afterFailures: 1, random: 0) == 0.5)
        #expect(rules.backoff(afterFailures: 4, random: 1) == 8)
        #expect(rules.backoff(afterFailures: 40, random: 1) == 600)
    }

    @Test("no retry after the resource deadline")
    func deadline() {
        let decision = rules.decide(
            error: FerryError(.timedOut, "x"), hint: RetryHint(statusCode: 503, retryAfter: .seconds(120)), method: "GET",
            resumableUpload: false, failures: 1, now: now, deadline: now + 60)
        guard case .fail("timedOut", let message) = decision else { Issue.record("not failed: \(decision)"); return }
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
