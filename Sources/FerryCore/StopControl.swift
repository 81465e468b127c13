import Synchronization

/// A wake-up that is not lost: `signal()` before `wait()` makes the next wait return at
/// once. One waiter at a time; a cancelled waiter returns.
///
/// ```swift
/// let wakeup = Signal()
/// wakeup.signal()
/// await wakeup.wait()   // returns at once
/// ```
public final class Signal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    public init() {}

    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Forgets a pending signal: for a waiter about to look at everything a signal could have
    /// announced (one look covers the signals before it).
    public func clear() {
        state.withLock { $0.pending = false }
    }

    /// Returns on a signal (at once if one is pending), or when the calling task is cancelled.
    public func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    if Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }?.resume()
        }
    }
}

/// Stops one piece of work early and says when it has ended, for work that runs as a child
/// of a task group (which cannot cancel one child alone): the work's side calls `runs(_:)`,
/// the controller `stop()` and then `ended()`.
///
/// ```swift
/// let control = StopControl()
/// group.addTask { await control.runs { await transfer() } }
/// control.stop()          // the transfer is cancelled
/// await control.ended()   // and has let go
/// ```
public final class StopControl: Sendable {
    private let stopRequested = Signal()
    private let finished = Latch()

    public init() {}

    /// Runs `work` until it ends or `stop()` is called (it is then cancelled); then marks the
    /// work ended.
    public func runs(_ work: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { race in
            race.addTask { await work() }
            race.addTask { await self.stopRequested.wait() }
            await race.next()
            race.cancelAll()
        }
        finished.open()
    }

    public func stop() { stopRequested.signal() }

    /// Waits until the work has ended (after `stop()`, or on its own); any number of callers,
    /// before or after its end (two controllers may stop the same work).
    public func ended() async { await finished.wait() }
}

/// Opens once; every wait, before or after, returns then (or when its task is cancelled).
///
/// ```swift
/// let done = Latch()
/// done.open()
/// await done.wait()   // returns at once, as does every later wait
/// ```
public final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }
    private let state = Mutex(State())

    public init() {}

    public func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    public func wait() async {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.isOpen || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
