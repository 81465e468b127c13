/// What happened to one attempt, in the terms the retry rulebook decides on.
///
/// The engine and ferryd classify their own errors into these; the rulebook never sees an
/// error type, so one table serves the in-process engine, ferryd and the batch client.
public enum AttemptOutcome: Sendable, Hashable {
    /// A response head arrived with this status (`Retry-After` already parsed, if sent).
    case answered(status: Int, retryAfter: Duration?)
    /// No connection was made (refused, no such host, TLS handshake): nothing reached the
    /// server, so any request may be sent again.
    case notConnected
    /// The connection closed before any byte of a response, and before any body byte was
    /// handed over: most often a kept-alive connection the server had just closed.
    case closedBeforeResponse
    /// The exchange broke after the request (or part of it) left: lost connection, idle
    /// time-out. The server may have acted on it.
    case brokenAfterSending
    /// A failure that trying again cannot fix: a bad URL, an untrusted certificate, a file
    /// error, a failed integrity check, a cancellation.
    case permanent
}

/// What the request allows, for the rulebook: its method and what sending it again costs.
public struct RetryRequest: Sendable, Hashable {
    /// Whether the body can be sent again.
    public enum Body: Sendable, Hashable {
        /// No body, `Data`, or a file: sent again from the start.
        case repeatable
        /// A stream: read once, never sent twice.
        case stream
    }

    public var method: String
    public var body: Body
    /// The transfer continues from where it was instead of starting over: a download with a
    /// validator and bytes on disk, or an upload whose resource the server keeps (the server's
    /// offset says what it has, so nothing is applied twice).
    public var resumes: Bool
    /// Body bytes were already handed to the app (a data task's chunks): they cannot be
    /// taken back, so the transfer is not started again.
    public var deliveredBody: Bool
    /// The one immediate resend after ``AttemptOutcome/closedBeforeResponse`` is still
    /// available (URLSession's behaviour; ferryd turns it off and schedules instead).
    public var immediateResendAvailable: Bool

    public init(method: String, body: Body = .repeatable, resumes: Bool = false, deliveredBody: Bool = false, immediateResendAvailable: Bool = true) {
        self.method = method
        self.body = body
        self.resumes = resumes
        self.deliveredBody = deliveredBody
        self.immediateResendAvailable = immediateResendAvailable
    }

    /// Methods whose repetition has the effect of one request (RFC 9110 §9.2.2).
    public static func isIdempotent(_ method: String) -> Bool {
        ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(method.uppercased())
    }

    public var isIdempotent: Bool { Self.isIdempotent(method) }
}

/// What to do after an attempt: the rulebook's answer.
public enum RetryDecision: Sendable, Hashable {
    /// Send again at once, without counting an attempt (once per transfer).
    case retryNow(reason: String)
    /// Start again after `delay`: the server's `Retry-After` or the policy's backoff.
    case retryAfter(Duration, because: RetryWait, reason: String)
    /// Continue from where the transfer got (the validator's range, the server's upload
    /// offset) after `delay`.
    case resume(after: Duration, because: RetryWait, reason: String)
    /// The response is the answer: hand it over as it is.
    case deliver(reason: String)
    /// The failure is the answer.
    case fail(reason: String)
    /// A retry was due, but its wait ends after the task's resource deadline
    /// (`timeoutIntervalForResource`): the task fails as timed out.
    case outOfTime(reason: String)

    /// The wait before the next attempt, if there is one.
    public var delay: Duration? {
        switch self {
        case .retryNow: .zero
        case .retryAfter(let delay, _, _), .resume(let delay, _, _): delay
        case .deliver, .fail, .outOfTime: nil
        }
    }

    public var reason: String {
        switch self {
        case .retryNow(let reason), .retryAfter(_, _, let reason), .resume(_, _, let reason), .deliver(let reason), .fail(let reason),
            .outOfTime(let reason):
            reason
        }
    }
}

/// Why a retry waits: the server said how long, or the policy's backoff.
public enum RetryWait: String, Sendable, Hashable, Codable, CaseIterable {
    case retryAfter
    case backoff
}

extension RetryPolicy {
    /// The one retry rulebook (docs/retries.md has it as a table; a test checks each row):
    ///
    /// - `429` and `503` mean the server did not act on the request (RFC 6585 §4, RFC 9110
    ///   §15.6.4), so any method is sent again — after `Retry-After` when given (up to
    ///   ``maximumRetryAfter``, beyond it the response is delivered), else after the backoff.
    ///   Other statuses are answers, delivered as they are.
    /// - Nothing sent (no connection): any method, after the backoff.
    /// - Closed before any response: an idempotent request is sent once more at once; after
    ///   that, as a broken exchange.
    /// - Broken after sending: continued when the transfer resumes (validator, server's
    ///   upload offset), else sent again when the method is idempotent; a `POST` or `PATCH`
    ///   fails, because the server may already have acted on it.
    /// - Never: a stream body (read once), bytes already handed to the app, a permanent
    ///   failure, attempts used up (``maximumAttempts``), or a wait past `timeLeft` (the
    ///   task's `timeoutIntervalForResource`).
    ///
    /// `failures` counts failed attempts so far, this one included (1 after the first).
    ///
    /// ```swift
    /// let decision = RetryPolicy.standard.decide(
    ///     .answered(status: 503, retryAfter: .seconds(2)), for: RetryRequest(method: "POST"), failures: 1)
    /// // .retryAfter(2 seconds, because: .retryAfter, …)
    /// ```
    public func decide(
        _ outcome: AttemptOutcome, for request: RetryRequest, failures: Int,
        timeLeft: Duration? = nil, random: Double = .random(in: 0...1)
    ) -> RetryDecision {
        let attemptsLeft = failures < maximumAttempts
        let backoff = delay(afterFailures: failures, random: random)
        func waiting(_ delay: Duration, _ wait: RetryWait, _ reason: String, resumes: Bool) -> RetryDecision {
            if let timeLeft, delay > timeLeft {
                return .outOfTime(reason: "gave up: the next attempt (\(reason)) would come after the task's timeoutIntervalForResource")
            }
            return resumes ? .resume(after: delay, because: wait, reason: reason) : .retryAfter(delay, because: wait, reason: reason)
        }
        switch outcome {
        case .answered(let status, let retryAfter):
            guard retryableStatuses.contains(status) else { return .deliver(reason: "HTTP \(status) is an answer") }
            guard request.body == .repeatable else { return .deliver(reason: "HTTP \(status); a stream body cannot be sent again") }
            guard attemptsLeft else { return .deliver(reason: "HTTP \(status) after \(failures) attempts") }
            if let retryAfter {
                guard retryAfter <= maximumRetryAfter else {
                    return .deliver(reason: "HTTP \(status) with Retry-After \(retryAfter), beyond \(maximumRetryAfter)")
                }
                return waiting(retryAfter, .retryAfter, "HTTP \(status) with Retry-After \(Self.wholeSeconds(retryAfter))", resumes: false)
            }
            return waiting(backoff, .backoff, "HTTP \(status) without Retry-After", resumes: false)
        case .permanent:
            return .fail(reason: "trying again cannot fix this failure")
        case .notConnected, .closedBeforeResponse, .brokenAfterSending:
            guard request.body == .repeatable else { return .fail(reason: "a stream body cannot be sent again") }
            guard !request.deliveredBody else { return .fail(reason: "part of the body was already handed over") }
            if outcome == .closedBeforeResponse, request.isIdempotent, request.immediateResendAvailable {
                return .retryNow(reason: "the connection closed before any response")
            }
            guard attemptsLeft else { return .fail(reason: "gave up after \(failures) attempts") }
            if outcome == .notConnected {
                return waiting(backoff, .backoff, "no connection; nothing was sent", resumes: request.resumes)
            }
            if request.resumes { return waiting(backoff, .backoff, "the exchange broke; continuing from where it got", resumes: true) }
            guard request.isIdempotent else {
                return .fail(reason: "the \(request.method) request is not sent again because the server may already have acted on it")
            }
            return waiting(backoff, .backoff, "the exchange broke", resumes: false)
        }
    }

    /// Whole seconds for messages ("Retry-After 2 s").
    static func wholeSeconds(_ duration: Duration) -> String {
        "\(Int(duration.timeInterval.rounded())) s"
    }
}
