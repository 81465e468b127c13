import Synchronization

/// A callback that is set, replaced or cleared on one thread and called on others: an
/// observer of the store's commits, a handler an app installs.
///
/// Why not a closure kept directly as a lock's value (`Mutex<((T) -> Void)?>`,
/// `NIOLockedValueBox<…>`): the lock's value is generic, so every `withLock` access takes the
/// closure out of the generic form and puts it back, wrapping it in two more reabstraction
/// thunks each time, and every later call walks all of them. ferryd's commit observer was
/// kept that way and grew slower with each commit (a few hundred microseconds per call after
/// ten thousand). Here the closure is a field of a struct, which keeps its own form.
///
/// ```swift
/// let committed = SharedCallback<CommittedEvents>()
/// committed.set { events in outbox.deliver(events) }
/// committed.call(events)   // false when no callback is set
/// ```
public final class SharedCallback<Argument>: Sendable {
    private struct Held {
        var body: (@Sendable (Argument) -> Void)?
    }
    private let held = Mutex(Held())

    public init() {}

    /// Sets the callback (nil clears it); later calls use the new one.
    public func set(_ body: (@Sendable (Argument) -> Void)?) {
        held.withLock { $0.body = body }
    }

    /// Whether a callback is set.
    public var isSet: Bool { held.withLock { $0.body != nil } }

    /// Calls the callback, outside the lock, when one is set; returns whether one was.
    @discardableResult
    public func call(_ argument: Argument) -> Bool {
        guard let body = held.withLock({ $0.body }) else { return false }
        body(argument)
        return true
    }
}
