import Synchronization

/// Work that sleeps up to 30 s and says whether it was cancelled: the evidence that a stop
/// reached it, without timing anything (work that was not cancelled sleeps its 30 s out and
/// leaves the flag false; a loaded machine once stalled a timed check for 5 s).
///
/// ```swift
/// let probe = CancellationProbe()
/// let task = Task { await probe.work() }
/// task.cancel()
/// await task.value
/// #expect(probe.wasCancelled)
/// ```
public final class CancellationProbe: Sendable {
    private let cancelled = Mutex(false)

    public init() {}

    public var wasCancelled: Bool { cancelled.withLock { $0 } }

    public func work() async {
        do { try await Task.sleep(for: .seconds(30)) } catch { cancelled.withLock { $0 = true } }
    }
}
