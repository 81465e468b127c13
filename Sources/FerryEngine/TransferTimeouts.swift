import FerryCore
import Foundation
import Synchronization

/// Ends the transfers of an engine that stalled (nothing moved for their idle time-out,
/// `timeoutIntervalForRequest`) or outlived their deadline (`timeoutIntervalForResource`).
/// One task watches every running transfer, and only while there are some: a sleeping task
/// per transfer cost about as much as the transfer of a small file itself.
///
/// ```swift
/// let watch = timeouts.watch(TransferTimeouts.Watched(progress: progress, idle: .seconds(60), deadline: nil, url: url) { error in
///     work.cancel()   // the transfer's task; `error` says which limit it passed
/// })
/// defer { timeouts.unwatch(watch) }
/// ```
final class TransferTimeouts: Sendable {
    /// A transfer's limits, before its watch starts: nothing moving for `idle`
    /// (`timeoutIntervalForRequest`), or `resource` from the start (`timeoutIntervalForResource`).
    struct Limits: Sendable {
        var idle: Duration
        var resource: Duration?
        var url: URL
    }

    struct Watched: Sendable {
        var progress: TransferProgress
        var idle: Duration
        var deadline: ContinuousClock.Instant?
        var url: URL
        /// Called once, outside the lock, when the transfer passed a limit.
        var expire: @Sendable (FerryError) -> Void

        /// When the transfer times out if nothing moves before, or the error if it has.
        func check(at now: ContinuousClock.Instant) -> Result<ContinuousClock.Instant, FerryError> {
            if let deadline, deadline <= now {
                return .failure(FerryError(.timedOut, "the task took longer than timeoutIntervalForResource", url: url))
            }
            let idleEnds = progress.lastActivity + idle
            if idleEnds <= now {
                return .failure(FerryError(.timedOut, "no data for \(idle.components.seconds) s (timeoutIntervalForRequest)", url: url))
            }
            return .success(deadline.map { min($0, idleEnds) } ?? idleEnds)
        }
    }

    private struct State {
        var watched: [Int: Watched] = [:]
        var nextIdentifier = 0
        /// The watching task while there is one, its number, and when it looks next.
        var watcher: Task<Void, Never>?
        var watcherNumber = 0
        var looksAt: ContinuousClock.Instant?
    }
    private let state = Mutex(State())

    /// Watches a transfer until `unwatch` with the identifier returned.
    func watch(_ transfer: Watched) -> Int {
        let now = ContinuousClock.now
        return state.withLock { state in
            let identifier = state.nextIdentifier
            state.nextIdentifier += 1
            state.watched[identifier] = transfer
            // A new watcher when there is none, or when this transfer is due before the
            // running one looks again (a shorter time-out than the others').
            let due = (try? transfer.check(at: now).get()) ?? now
            if state.watcher == nil || state.looksAt.map({ due < $0 }) == true {
                state.watcher?.cancel()
                state.watcherNumber += 1
                let number = state.watcherNumber
                state.looksAt = due
                state.watcher = Task { await self.watching(as: number) }
            }
            return identifier
        }
    }

    func unwatch(_ identifier: Int) {
        _ = state.withLock { $0.watched.removeValue(forKey: identifier) }
    }

    /// Stops watching (the engine shuts down).
    func stop() {
        state.withLock { state in
            state.watcher?.cancel()
            state.watcher = nil
            state.watcherNumber += 1
        }
    }

    /// Looks at every transfer when the first could be due, ends those past a limit, and
    /// stops when none is left (or a newer watcher took over).
    private func watching(as number: Int) async {
        while true {
            let now = ContinuousClock.now
            var expired: [(Watched, FerryError)] = []
            let next = state.withLock { state -> ContinuousClock.Instant? in
                guard state.watcherNumber == number else { return nil }
                var earliest: ContinuousClock.Instant?
                for (identifier, transfer) in state.watched {
                    switch transfer.check(at: now) {
                    case .success(let due): earliest = min(earliest ?? due, due)
                    case .failure(let error):
                        expired.append((transfer, error))
                        state.watched[identifier] = nil
                    }
                }
                state.looksAt = earliest
                if earliest == nil { state.watcher = nil }
                return earliest
            }
            for (transfer, error) in expired { transfer.expire(error) }
            guard let next else { return }
            // A little after the limit, so that a transfer due then is past it.
            do { try await Task.sleep(until: next + .milliseconds(5), clock: .continuous) } catch { return }
        }
    }
}
