public import Foundation

/// When a failed transfer is tried again, and how long to wait first.
///
/// Only requests that are safe to repeat are retried: `GET`, `HEAD`, `PUT`, `DELETE`,
/// `OPTIONS`, and uploads the server lets us resume. A `POST` that failed after its body
/// left is never sent twice, because the server may already have acted on it.
///
/// The wait before attempt *n + 1* is `min(maximumDelay, initialDelay × 2ⁿ⁻¹)`, scaled by
/// a random factor in 0.5…1.0 so that many clients do not return in step:
///
/// | after failure | `.standard` waits |
/// |---|---|
/// | 1 | 0.5 – 1 s |
/// | 2 | 1 – 2 s |
/// | 3 | 2 – 4 s |
/// | 4 | 4 – 8 s |
/// | 5+ | up to 30 s |
///
/// A `429` or `503` with `Retry-After` waits exactly what the server asked (up to
/// `maximumRetryAfter`; longer, and the response is delivered as it is).
///
/// ```swift
/// var transfer = Transfer(request: request, retry: .standard)
/// transfer.retry.maximumAttempts = 10
/// ```
public struct RetryPolicy: Sendable, Hashable {
    public var maximumAttempts: Int
    public var initialDelay: Duration
    public var maximumDelay: Duration
    /// Statuses that mean "try again later".
    public var retryableStatuses: Set<Int>
    public var maximumRetryAfter: Duration

    public init(
        maximumAttempts: Int,
        initialDelay: Duration = .seconds(1),
        maximumDelay: Duration = .seconds(30),
        retryableStatuses: Set<Int> = [429, 503],
        maximumRetryAfter: Duration = .seconds(300)
    ) {
        self.maximumAttempts = maximumAttempts
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.retryableStatuses = retryableStatuses
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// One attempt, as `URLSession` does for in-process sessions.
    public static let none = RetryPolicy(maximumAttempts: 1, retryableStatuses: [])
    /// Five attempts with the curve above.
    public static let standard = RetryPolicy(maximumAttempts: 5)

    /// The wait after `failures` failed attempts (1-based); `random` is in 0…1.
    public func delay(afterFailures failures: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        let exponent = min(max(failures - 1, 0), 30)
        let raw = initialDelay * (1 << exponent)
        let capped = min(raw, maximumDelay)
        return capped * (0.5 + 0.5 * min(max(random, 0), 1))
    }

    /// `Retry-After` as seconds or an HTTP date, relative to `now`.
    public static func parseRetryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) { return seconds >= 0 ? .seconds(seconds) : nil }
        guard let date = HTTPDate.parse(value) else { return nil }
        let seconds = max(0, date.timeIntervalSince(now))
        return .milliseconds(Int64(seconds * 1000))
    }

    static func isIdempotent(_ method: String) -> Bool {
        ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(method.uppercased())
    }
}

/// Sleeping, behind a protocol so tests can see (and skip) the waits the engine asks for.
public protocol Sleeper: Sendable {
    func sleep(for duration: Duration) async throws
}

/// Real time.
public struct ContinuousSleeper: Sleeper {
    public init() {}
    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form HTTP dates take.
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
