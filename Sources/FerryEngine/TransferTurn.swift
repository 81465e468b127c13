import FerryCore
import Foundation
import Synchronization

/// The engine's watch over one transfer, from its first wait for its host to its end: the
/// progress its time-outs look at, the time-out that ended it if one did, and how to stop it
/// now (withdraw it from its host's queue, or cancel its task).
final class TransferWatch: Sendable {
    let progress: TransferProgress
    private struct State {
        var timedOut: FerryError?
        var stop: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    init(progress: TransferProgress) {
        self.progress = progress
    }

    /// From now on a time-out calls `stop`; at once when one already passed.
    func stop(with stop: @escaping @Sendable () -> Void) {
        let passed = state.withLock { state -> Bool in
            state.stop = stop
            return state.timedOut != nil
        }
        if passed { stop() }
    }

    /// A limit passed: noted once, and the transfer is stopped.
    func expire(_ error: FerryError) {
        let stop = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.timedOut == nil else { return nil }
            state.timedOut = error
            return state.stop
        }
        stop?()
    }

    /// The time-out that ended the transfer, if one did.
    var timedOut: FerryError? { state.withLock { $0.timedOut } }
}

/// A transfer's turn at its host, asked for before the transfer has a task to run in: one
/// queued behind `maximumConnectionsPerHost` is this and the closure that starts it, not a
/// task suspended in the engine (its frames and the task allocator's first slab, about 8 KiB
/// each, with thousands queued). The request time-out runs from the moment it is made, as on
/// the platform, where a task waiting for a connection can time out.
///
/// ```swift
/// let turn = try engine.turn(for: transfer, observer: observer) { ready in   // told once
///     if case .success(let turn) = ready { Task { try await engine.run(transfer, turn: turn, …) } }
/// }
/// handle.attach(stop: { turn.withdraw() })   // a cancel or suspend while it waits
/// turn.queue()                               // ready at once when the host has room
/// ```
package final class TransferTurn: Sendable {
    private enum Phase {
        case new
        case queued(UInt64)
        /// The slot is the transfer's.
        case admitted
        /// Withdrawn or timed out before its turn came.
        case ended
    }

    let host: String
    let watch: TransferWatch
    private let engine: TransferEngine
    private let limits: TransferTimeouts.Limits
    private let url: URL
    private struct State {
        var phase = Phase.new
        /// Told once, then dropped.
        var ready: (@Sendable (Result<TransferTurn, FerryError>) -> Void)?
        /// The engine's watch, from `queue()` until the transfer ends or leaves the queue.
        var watching: Int?
    }
    private let state: Mutex<State>

    fileprivate init(
        engine: TransferEngine, transfer: Transfer, host: String, observer: any TransferObserver,
        ready: @escaping @Sendable (Result<TransferTurn, FerryError>) -> Void
    ) {
        self.engine = engine
        self.host = host
        self.url = transfer.request.url
        self.state = Mutex(State(ready: ready))
        self.limits = engine.limits(of: transfer)
        let watch = TransferWatch(progress: TransferProgress(observer: observer))
        self.watch = watch
        watch.stop(with: { [weak self] in _ = self?.withdraw(because: self?.watch.timedOut) })
    }

    /// Asks for the host's turn, and the request time-out starts: `ready` is told at once when
    /// the host has room, else from the thread of the transfer that makes room, unless the
    /// turn is withdrawn or times out first. Nothing is told before this call, so whoever
    /// may withdraw the turn can be told of it first.
    package func queue() {
        let watching = engine.watch(limits, with: watch)
        let watchedNow = state.withLock { state -> Bool in
            guard case .new = state.phase else { return false }
            state.watching = watching
            return true
        }
        guard watchedNow else { return engine.unwatch(watching) }  // withdrawn already
        let id = engine.limiter.enqueue(host: host) { [self] in admitted() }
        enum Next { case wait, go, giveBack }
        let next = state.withLock { state -> Next in
            switch state.phase {
            case .new:
                if let id {
                    state.phase = .queued(id)
                    return .wait
                }
                state.phase = .admitted
                return .go
            case .admitted, .queued:
                return .wait  // its slot came before this look
            case .ended:
                return .giveBack
            }
        }
        switch next {
        case .wait: break
        case .go: tell(.success(self))
        case .giveBack:
            // Withdrawn before it was queued: a slot it took goes back; a waiter that a slot
            // reaches meanwhile passes it on (`admitted`).
            if let id { _ = engine.limiter.withdraw(host: host, id: id) } else { engine.limiter.release(host: host) }
        }
    }

    /// Takes the transfer out of its host's queue (cancelled or suspended while it waits):
    /// true when its turn had not come, and `ready` is then told it was cancelled; false when
    /// it had (stop its task instead).
    @discardableResult
    package func withdraw() -> Bool {
        withdraw(because: nil)
    }

    private func withdraw(because timeOut: FerryError?) -> Bool {
        let out = state.withLock { state -> Bool in
            switch state.phase {
            case .new:
                state.phase = .ended
                return true
            case .queued(let id):
                guard engine.limiter.withdraw(host: host, id: id) else { return false }
                state.phase = .ended
                return true
            case .admitted, .ended:
                return false
            }
        }
        guard out else { return false }
        endWatch()
        tell(.failure(timeOut ?? FerryError.from(CancellationError(), url: url)))
        return true
    }

    /// A slot of the host passed to this transfer.
    private func admitted() {
        let now = state.withLock { state -> Bool in
            switch state.phase {
            case .new, .queued:
                state.phase = .admitted
                return true
            case .admitted, .ended:
                return false
            }
        }
        if now { tell(.success(self)) } else { engine.limiter.release(host: host) }  // ended meanwhile: passed on
    }

    private func tell(_ result: Result<TransferTurn, FerryError>) {
        let ready = state.withLock { state in
            defer { state.ready = nil }
            return state.ready
        }
        ready?(result)
    }

    /// The transfer ran: its watch ends.
    func finish() {
        endWatch()
    }

    /// A turn that came, for a run that will not start after all (its session went away
    /// meanwhile): the slot goes back and the watch ends.
    package func abandon() {
        engine.limiter.release(host: host)
        endWatch()
    }

    private func endWatch() {
        let watching = state.withLock { state in
            defer { state.watching = nil }
            return state.watching
        }
        if let watching { engine.unwatch(watching) }
    }
}

extension TransferEngine {
    /// A turn at `transfer`'s host (``TransferTurn``), whose `ready` is told once; its request
    /// time-out starts now. Throws for a URL the engine cannot run (no host, another scheme).
    package func turn(
        for transfer: Transfer, observer: any TransferObserver, ready: @escaping @Sendable (Result<TransferTurn, FerryError>) -> Void
    ) throws(FerryError) -> TransferTurn {
        TransferTurn(engine: self, transfer: transfer, host: try Self.host(of: transfer), observer: observer, ready: ready)
    }

    /// Runs `transfer`, whose `turn` came, to its end in the calling task, which is the
    /// transfer's alone: `cancel` cancels that task, and a time-out calls it.
    /// `first`: its first request went out on its connection's loop (``LoopTransfer``), and
    /// what came of it needs this path.
    package func run(
        _ transfer: Transfer, turn: TransferTurn, observer: any TransferObserver, first: FirstRequest? = nil,
        cancellingWith cancel: @escaping @Sendable () -> Void
    ) async throws -> TransferResult {
        defer { turn.finish() }
        turn.watch.stop(with: cancel)
        let admitted = limiter.slot(host: turn.host)
        defer { admitted.releaseIfUnused() }
        return try await mappingTimeOut(of: transfer, watch: turn.watch) {
            try Task.checkCancellation()  // a cancel that came as the turn did
            return try await self.runThroughCache(transfer, observer: observer, progress: turn.watch.progress, admitted: admitted, first: first)
        }
    }
}
