import FerryCore
import Foundation
import Testing

/// The retry rulebook, row by row as docs/retries.md prints it. Each row names a request
/// (method and body) and an outcome, and the one decision every path (in-process engine,
/// ferryd, batch) takes from it.
@Suite("Retry rulebook")
struct RetryRulebookTests {
    /// `random: 1` makes the backoff exactly `initialDelay × 2ⁿ⁻¹` (1 s after the first failure).
    static let policy = RetryPolicy.standard

    enum Expected: Sendable {
        case retryNow, retryAfterServer, retryAfterBackoff, resume, deliver, fail
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var method: String
        var body: RetryRequest.Body = .repeatable
        var resumes = false
        var deliveredBody = false
        var immediateResendAvailable = true
        var outcome: AttemptOutcome
        var expected: Expected
        var testDescription: String { "\(method)\(body == .stream ? " (stream)" : "")\(resumes ? " (resumes)" : "") × \(outcome) → \(expected)" }
    }

    static let rows: [Row] = [
        // 429 and 503: the server did not act on the request, any method goes again.
        Row(method: "GET", outcome: .answered(status: 503, retryAfter: .seconds(2)), expected: .retryAfterServer),
        Row(method: "POST", outcome: .answered(status: 503, retryAfter: .seconds(2)), expected: .retryAfterServer),
        Row(method: "PATCH", outcome: .answered(status: 429, retryAfter: .seconds(2)), expected: .retryAfterServer),
        Row(method: "POST", outcome: .answered(status: 503, retryAfter: nil), expected: .retryAfterBackoff),
        Row(method: "GET", outcome: .answered(status: 429, retryAfter: nil), expected: .retryAfterBackoff),
        Row(method: "GET", outcome: .answered(status: 503, retryAfter: .seconds(301)), expected: .deliver),  // beyond maximumRetryAfter
        Row(method: "PUT", body: .stream, outcome: .answered(status: 503, retryAfter: .seconds(2)), expected: .deliver),
        Row(method: "GET", outcome: .answered(status: 500, retryAfter: nil), expected: .deliver),
        Row(method: "GET", outcome: .answered(status: 404, retryAfter: nil), expected: .deliver),
        // Nothing sent.
        Row(method: "POST", outcome: .notConnected, expected: .retryAfterBackoff),
        Row(method: "GET", outcome: .notConnected, expected: .retryAfterBackoff),
        Row(method: "POST", resumes: true, outcome: .notConnected, expected: .resume),
        Row(method: "POST", body: .stream, outcome: .notConnected, expected: .fail),
        // Closed before any response.
        Row(method: "GET", outcome: .closedBeforeResponse, expected: .retryNow),
        Row(method: "PUT", outcome: .closedBeforeResponse, expected: .retryNow),
        Row(method: "GET", immediateResendAvailable: false, outcome: .closedBeforeResponse, expected: .retryAfterBackoff),
        Row(method: "POST", outcome: .closedBeforeResponse, expected: .fail),
        Row(method: "POST", resumes: true, outcome: .closedBeforeResponse, expected: .resume),
        // Broken after sending.
        Row(method: "GET", outcome: .brokenAfterSending, expected: .retryAfterBackoff),
        Row(method: "GET", resumes: true, outcome: .brokenAfterSending, expected: .resume),
        Row(method: "DELETE", outcome: .brokenAfterSending, expected: .retryAfterBackoff),
        Row(method: "POST", outcome: .brokenAfterSending, expected: .fail),
        Row(method: "PATCH", outcome: .brokenAfterSending, expected: .fail),
        Row(method: "POST", resumes: true, outcome: .brokenAfterSending, expected: .resume),
        Row(method: "GET", deliveredBody: true, outcome: .brokenAfterSending, expected: .fail),
        Row(method: "PUT", body: .stream, outcome: .brokenAfterSending, expected: .fail),
        // Permanent.
        Row(method: "GET", outcome: .permanent, expected: .fail),
        Row(method: "GET", resumes: true, outcome: .permanent, expected: .fail),
    ]

    @Test("each row of the table", arguments: rows)
    func row(_ row: Row) {
        let request = RetryRequest(
            method: row.method, body: row.body, resumes: row.resumes, deliveredBody: row.deliveredBody,
            immediateResendAvailable: row.immediateResendAvailable)
        let decision = Self.policy.decide(row.outcome, for: request, failures: 1, random: 1)
        switch (decision, row.expected) {
        case (.retryNow, .retryNow), (.deliver, .deliver), (.fail, .fail):
            break
        case (.retryAfter(let delay, .retryAfter, _), .retryAfterServer):
            #expect(delay == .seconds(2), "the server's Retry-After is waited exactly")
        case (.retryAfter(let delay, .backoff, _), .retryAfterBackoff), (.resume(let delay, .backoff, _), .resume):
            #expect(delay == .seconds(1), "the first backoff is initialDelay")
        default:
            Issue.record("\(row.testDescription): got \(decision)")
        }
    }

    @Test("attempts are counted: the last one delivers a 503 and fails a lost connection")
    func attemptsUsedUp() {
        let policy = RetryPolicy(maximumAttempts: 3)
        let get = RetryRequest(method: "GET", immediateResendAvailable: false)
        #expect(policy.decide(.answered(status: 503, retryAfter: nil), for: get, failures: 2).delay != nil)
        guard case .deliver = policy.decide(.answered(status: 503, retryAfter: nil), for: get, failures: 3) else {
            Issue.record("the third 503 of three attempts is the answer"); return
        }
        guard case .fail = policy.decide(.brokenAfterSending, for: get, failures: 3) else {
            Issue.record("the third failure of three attempts fails"); return
        }
        // The immediate resend is not an attempt: URLSession's one resend happens even with `.none`.
        guard case .retryNow = RetryPolicy.none.decide(.closedBeforeResponse, for: RetryRequest(method: "GET"), failures: 1) else {
            Issue.record("the immediate resend is outside the policy"); return
        }
    }

    @Test("a wait past the resource deadline gives up as timed out")
    func deadline() {
        let decision = RetryPolicy.untilResourceTimeout.decide(
            .answered(status: 503, retryAfter: .seconds(120)), for: RetryRequest(method: "GET"), failures: 1, timeLeft: .seconds(60))
        guard case .outOfTime(let reason) = decision else { Issue.record("not out of time: \(decision)"); return }
        #expect(reason.contains("timeoutIntervalForResource"))
    }

    @Test("backoff doubles from initialDelay, is capped, and jitters between half and all of it")
    func backoffCurve() {
        let policy = RetryPolicy(maximumAttempts: .max, initialDelay: .seconds(1), maximumDelay: .seconds(600))
        #expect(policy.delay(afterFailures: 1, random: 1) == .seconds(1))
        #expect(policy.delay(afterFailures: 1, random: 0) == .milliseconds(500))
        #expect(policy.delay(afterFailures: 4, random: 1) == .seconds(8))
        #expect(policy.delay(afterFailures: 40, random: 1) == .seconds(600))
    }

    @Test("a policy travels as JSON in seconds and comes back equal; a nonsense policy is refused")
    func codable() throws {
        let policy = RetryPolicy(maximumAttempts: 7, initialDelay: .milliseconds(250), maximumDelay: .seconds(60), retryableStatuses: [429, 503, 504])
        let json = try JSONEncoder().encode(policy)
        #expect(try JSONDecoder().decode(RetryPolicy.self, from: json) == policy)
        #expect(String(decoding: json, as: UTF8.self).contains("\"initialDelay\":0.25"))
        let bad = #"{"maximumAttempts":0,"initialDelay":1,"maximumDelay":1,"retryableStatuses":[503],"maximumRetryAfter":1}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(RetryPolicy.self, from: Data(bad.utf8)) }
        let negative = #"{"maximumAttempts":3,"initialDelay":-1,"maximumDelay":1,"retryableStatuses":[503],"maximumRetryAfter":1}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(RetryPolicy.self, from: Data(negative.utf8)) }
    }
}
