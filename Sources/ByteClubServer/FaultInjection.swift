import Foundation

/// Faults `byteclub-server` injects on purpose so that clients can test their recovery:
/// dropped connections, stalls, throttling, and `503`/`429` answers with `Retry-After`.
///
/// Off unless `--fault-*` flags (or this value) turn them on.
///
/// ```swift
/// var faults = FaultInjection()
/// faults.dropAfterBytes = 1 << 20      // cut each of the next connections after 1 MiB
/// faults.dropConnections = 1           // …but only the first one
/// faults.failNextRequests = 2          // then answer 503 twice
/// configuration.faults = faults
/// ```
public struct FaultInjection: Sendable, Equatable {
    /// Close a connection once this many bytes went through it (either way).
    public var dropAfterBytes: Int64? = nil
    /// How many connections the drop applies to (counting from start); `nil` is every one.
    public var dropConnections: Int? = 1
    /// Stop sending for `stallSeconds` once this many response bytes were written on a connection.
    public var stallAfterBytes: Int64? = nil
    /// Length of the stall.
    public var stallSeconds: Double = 5
    /// Cap each connection's response rate to this many bytes per second.
    public var throttleBytesPerSecond: Int? = nil
    /// Answer this many next requests with `failStatus` and `Retry-After`.
    public var failNextRequests: Int = 0
    /// `503` or `429`.
    public var failStatus: Int = 503
    /// Seconds put in `Retry-After`.
    public var retryAfterSeconds: Int = 1

    /// Creates a fault set that injects nothing until its properties are set.
    public init() {}
}
