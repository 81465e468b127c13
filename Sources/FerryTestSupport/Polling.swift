// Waiting for something that happens on its own — a file appears, a server has seen a
// request, a process exits — without a loop that falls through silently when time runs out.

/// Checks `condition` every `interval` until it holds; past `timeout` it throws a
/// ``PollTimeout`` that says what was awaited, for how long, and what was last seen.
///
/// The wait is bounded: the condition is checked at once, then every `interval`, and one
/// last time at the deadline. A condition that throws ends the wait with its error, so a
/// helper can give up early (say, when the process it waits for has exited).
///
/// ```swift
/// try await poll(until: "two PATCH requests reached the server", timeout: .seconds(5),
///                observed: "\(server.requests.map(\.method))") {
///     server.requests.filter { $0.method == "PATCH" }.count >= 2
/// }
/// // On time-out the test fails with:
/// // timed out after 5.01 s (limit 5 s, 251 checks) waiting for two PATCH requests
/// // reached the server (UploadTests.swift:64); last observed: ["POST", "PATCH"]
/// ```
///
/// - Parameters:
///   - what: What is awaited, as the failure should say it.
///   - timeout: How long to wait at most. 30 s unless told: at the start of the parallel
///     test round 500 tests share two cores, and a 20 ms sleep has been seen to last 2 s.
///   - interval: How long to sleep between checks.
///   - observed: A description of the state when time ran out, evaluated only then.
///   - condition: Whether what is awaited has happened.
public func poll(
    until what: String,
    timeout: Duration = .seconds(30),
    every interval: Duration = .milliseconds(20),
    observed: @autoclosure () -> String = "",
    isolation: isolated (any Actor)? = #isolation,
    fileID: String = #fileID,
    line: Int = #line,
    _ condition: () async throws -> Bool
) async throws {
    _ = try await eventually(
        what, timeout: timeout, every: interval, observed: observed(), fileID: fileID, line: line
    ) { try await condition() ? true : nil }
}

/// Like ``poll(until:timeout:every:observed:isolation:fileID:line:_:)``, for a value that
/// becomes available: `value` is asked every `interval` until it returns one, which is
/// returned; past `timeout` it throws a ``PollTimeout``.
///
/// ```swift
/// var tasks: [[String: Any]] = []
/// let task = try await eventually("task 1 is running", timeout: .seconds(20),
///                                 observed: "\(tasks)") {
///     tasks = try await ferry.tasks()
///     return tasks.first { $0["state"] as? String == "running" }
/// }
/// ```
public func eventually<T>(
    _ what: String,
    timeout: Duration = .seconds(30),
    every interval: Duration = .milliseconds(20),
    observed: @autoclosure () -> String = "",
    isolation: isolated (any Actor)? = #isolation,
    fileID: String = #fileID,
    line: Int = #line,
    _ value: () async throws -> T?
) async throws -> T {
    precondition(timeout >= .zero && interval > .zero, "poll \(what): a time-out ≥ 0 and an interval > 0")
    let clock = ContinuousClock()
    let start = clock.now
    let deadline = start + timeout
    var checks = 0
    while true {
        checks += 1
        if let found = try await value() { return found }
        let now = clock.now
        guard now < deadline else {
            throw PollTimeout(
                what: what, timeout: timeout, elapsed: now - start, checks: checks, observed: observed(),
                location: "\(fileID.split(separator: "/").last.map(String.init) ?? fileID):\(line)")
        }
        try await Task.sleep(until: min(now + interval, deadline), clock: clock)
    }
}

/// A bounded wait that ran out: what it waited for, for how long, and what it last saw.
public struct PollTimeout: Error, CustomStringConvertible {
    public var what: String
    public var timeout: Duration
    public var elapsed: Duration
    public var checks: Int
    public var observed: String
    /// `File.swift:line` of the wait.
    public var location: String

    public var description: String {
        "timed out after \(Self.seconds(elapsed)) (limit \(Self.seconds(timeout)), \(checks) checks) waiting for \(what) (\(location))"
            + (observed.isEmpty ? "" : "; last observed: \(observed)")
    }

    /// `5 s`, `0.25 s`, `12.31 s`.
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let hundredths = (Double(seconds) * 100 + Double(attoseconds) / 1e16).rounded()
        let whole = Int(hundredths) / 100, fraction = Int(hundredths) % 100
        if fraction == 0 { return "\(whole) s" }
        return fraction % 10 == 0 ? "\(whole).\(fraction / 10) s" : "\(whole).\(fraction < 10 ? "0" : "")\(fraction) s"
    }
}

/// A test's own failure with what it saw, for a step that cannot go on (`guard … else { throw
/// TestFailure("no welcome: \(reply)") }`): the test ends there and says why.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
