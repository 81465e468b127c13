public import Foundation

/// How often and how patiently a failed transfer is tried again. *Whether* an attempt is
/// tried again is the rulebook's (``decide(_:for:failures:timeLeft:random:)``, the same for
/// in-process sessions, ferryd and the batch client): a request that may have been acted on
/// (a `POST` whose body left) is never sent twice.
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
/// var configuration = Configuration.default
/// configuration.retryPolicy = .standard
/// configuration.retryPolicy.maximumAttempts = 10
/// ```
///
/// A background session's policy travels with each task to ferryd (in the protocol as
/// seconds: `{"maximumAttempts":5,"initialDelay":1,…}`).
public struct RetryPolicy: Sendable, Hashable, Codable {
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
    /// Background sessions: attempts until the task's `timeoutIntervalForResource` (7 days by
    /// default), waits growing from 1 s to 10 min, and `Retry-After` honoured however long.
    public static let untilResourceTimeout = RetryPolicy(
        maximumAttempts: .max, initialDelay: .seconds(1), maximumDelay: .seconds(600), maximumRetryAfter: .seconds(7 * 24 * 3600))

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

    enum CodingKeys: String, CodingKey {
        case maximumAttempts, initialDelay, maximumDelay, retryableStatuses, maximumRetryAfter
    }

    /// Durations as seconds, statuses sorted: the form the protocol and the store use.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(maximumAttempts, forKey: .maximumAttempts)
        try container.encode(initialDelay.timeInterval, forKey: .initialDelay)
        try container.encode(maximumDelay.timeInterval, forKey: .maximumDelay)
        try container.encode(retryableStatuses.sorted(), forKey: .retryableStatuses)
        try container.encode(maximumRetryAfter.timeInterval, forKey: .maximumRetryAfter)
    }

    /// Refuses what cannot be a policy: fewer than one attempt, a negative or unbounded wait,
    /// a status outside 100…599.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func duration(_ key: CodingKeys) throws -> Duration {
            let seconds = try container.decode(Double.self, forKey: key)
            guard seconds.isFinite, seconds >= 0, seconds <= 365 * 24 * 3600 else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(key.stringValue) is 0 to 31,536,000 seconds")
            }
            return .milliseconds(Int64((seconds * 1000).rounded()))
        }
        maximumAttempts = try container.decode(Int.self, forKey: .maximumAttempts)
        guard maximumAttempts >= 1 else {
            throw DecodingError.dataCorruptedError(forKey: .maximumAttempts, in: container, debugDescription: "at least one attempt")
        }
        initialDelay = try duration(.initialDelay)
        maximumDelay = try duration(.maximumDelay)
        maximumRetryAfter = try duration(.maximumRetryAfter)
        let statuses = try container.decode([Int].self, forKey: .retryableStatuses)
        guard statuses.allSatisfy((100...599).contains) else {
            throw DecodingError.dataCorruptedError(forKey: .retryableStatuses, in: container, debugDescription: "statuses are 100 to 599")
        }
        retryableStatuses = Set(statuses)
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form HTTP dates take (and the two
/// obsolete forms a recipient must read).
public enum HTTPDate {
    public static func parse(_ text: String) -> Date? {
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
