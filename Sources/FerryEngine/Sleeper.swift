import FerryCore
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
