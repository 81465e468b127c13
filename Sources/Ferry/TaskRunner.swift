import FerryCore
import FerryEngine
import FerryNetwork
import Foundation
import Synchronization

/// Where a session's tasks run: in this process through the engine (``InProcessRunner``), or
/// in ferryd (``BackgroundRunner``). A ``SessionTask`` keeps its lifecycle and calls its
/// session's runner with what the lifecycle decided; the runner does the work and completes
/// the task (``SessionTask/finish(error:generation:)``).
protocol TaskRunner: Sendable {
    /// An identifier for a new task, or nil to let the session number it. Background tasks
    /// take ferryd's, so a relaunched process finds them again.
    func reserveTaskIdentifier() throws(FerryError) -> Int?
    /// Starts run `generation` of `task` (its first, or one after `suspend()`).
    func start(_ task: SessionTask, generation: Int, isFirst: Bool)
    /// The task was suspended while running: stop its transfer, keep what it has.
    func suspend(_ task: SessionTask)
    /// A task that has started was cancelled: `running`, a run is in progress (stop it);
    /// otherwise it was suspended. The runner completes it (`SessionTask.cancellation`). A task
    /// that never started is completed by the task itself.
    func cancel(_ task: SessionTask, running: Bool)
    /// The session is being invalidated. Whether its tasks go on elsewhere (ferryd) or end
    /// here first.
    func invalidate(cancellingTasks: Bool) -> TaskRunnerInvalidation
    /// Releases what the runner holds (the engine's connections, ferryd's socket).
    func shutdown() async
}

enum TaskRunnerInvalidation {
    /// The tasks end in this process: the session is invalid when the last one has.
    case tasksEndHere
    /// The tasks go on without this process: the session is invalid at once.
    case tasksGoOnElsewhere
}

/// Runs tasks in this process, each run a transfer of the session's engine.
struct InProcessRunner: TaskRunner {
    let engine: TransferEngine
    /// The session's network settings, when they ask anything before a task connects.
    let connectivity: ConnectivityRequirement?

    func reserveTaskIdentifier() -> Int? { nil }

    /// Asks the engine for the transfer's turn at its host before it has a task (``TransferTurn``):
    /// a task queued behind `httpMaximumConnectionsPerHost` is then its turn, not a suspended
    /// Swift task, and its run begins when the turn comes. A session that asks about the
    /// network waits for it first, in the run's task.
    func start(_ task: SessionTask, generation: Int, isFirst: Bool) {
        let handle = RunHandle()
        // A suspend or cancel between `resume()` and here found no run to stop: a run that is no
        // longer the task's does not begin, and one cancelled meanwhile stops as it begins.
        let cancelledAlready = task.lock.withLockedValue { m -> Bool? in
            guard m.lifecycle.isCurrent(generation) else { return nil }
            m.run = handle
            return m.lifecycle.isCanceling
        }
        guard let cancelledAlready else { return }
        if cancelledAlready { handle.stop() }
        if let connectivity {
            spawn(task, generation: generation, handle: handle) {
                await self.runAfterNetwork(task, generation: generation, handle: handle, connectivity: connectivity)
            }
            return
        }
        let observer = TaskObserver(task: task)
        let transfer: Transfer
        let turn: TransferTurn
        do {
            transfer = try prepareTransfer(of: task)
            turn = try engine.turn(for: transfer, observer: observer) { ready in
                switch ready {
                case .success(let turn):
                    // A plain download with a kept-alive connection at hand runs on that
                    // connection's loop without a task, until it ends or needs one (LoopTransfer).
                    if let loop = engine.loopTransfer(transfer, turn: turn, observer: observer, ended: { outcome in
                        self.loopEnded(outcome, task: task, generation: generation, transfer: transfer, turn: turn, observer: observer, handle: handle)
                    }) {
                        handle.attach(stop: { loop.stop() })
                        return loop.begin()
                    }
                    runInTask(task, generation: generation, transfer: transfer, turn: turn, observer: observer, handle: handle, first: nil)
                case .failure(let error):
                    // Withdrawn (cancelled, suspended) or timed out while it waited: no run.
                    spawn(task, generation: generation, handle: handle) { await self.ended(task, generation: generation, transfer: transfer, error: error) }
                }
            }
        } catch {
            spawn(task, generation: generation, handle: handle) { await self.ended(task, generation: generation, transfer: nil, error: error) }
            return
        }
        handle.attach(stop: { turn.withdraw() })
        turn.queue()
    }

    /// Run `generation` of `task`, whose `turn` came, in a task of its own; from the first request
    /// that went out on its connection's loop, when there was one.
    private func runInTask(
        _ task: SessionTask, generation: Int, transfer: Transfer, turn: TransferTurn, observer: TaskObserver, handle: RunHandle, first: FirstRequest?
    ) {
        let started = spawn(task, generation: generation, handle: handle) {
            await self.run(task, generation: generation, transfer: transfer) {
                try await engine.run(transfer, turn: turn, observer: observer, first: first, cancellingWith: { _ = handle.stop() })
            }
        }
        if !started { turn.abandon() }  // the session went away as the turn came
    }

    /// A run carried on its connection's loop ended there, or needs a task for the rest.
    private func loopEnded(
        _ outcome: LoopOutcome, task: SessionTask, generation: Int, transfer: Transfer, turn: TransferTurn, observer: TaskObserver, handle: RunHandle
    ) {
        switch outcome {
        case .finished(let result):
            completed(task, generation: generation, with: result)
        case .stopped(let error):
            spawn(task, generation: generation, handle: handle) { await self.ended(task, generation: generation, transfer: transfer, error: error) }
        case .continueInTask(let first):
            runInTask(task, generation: generation, transfer: transfer, turn: turn, observer: observer, handle: handle, first: first)
        }
    }

    /// Runs `work` in a task of its own that `handle` stops (the delegate queue's, beside it);
    /// false when the session is gone (the task then completes cancelled).
    @discardableResult
    private func spawn(_ task: SessionTask, generation: Int, handle: RunHandle, _ work: @escaping @Sendable () async -> Void) -> Bool {
        guard let run = task.session.delegateQueue.spawn(work) else {
            task.finish(error: FerryError(.cancelled, "the session was invalidated", url: task.originalRequest.url), generation: generation)
            return false
        }
        handle.attach(run)
        return true
    }

    /// The transfer of `task`'s next run; an upload continues from the server's resume point.
    private func prepareTransfer(of task: SessionTask) throws -> Transfer {
        var made = try task.makeTransfer()
        if made.upload != nil, made.resumeUpload == nil {  // only a seekable body ever gets a point
            made.resumeUpload = task.lock.withLockedValue { $0.uploadPoint }
        }
        return made
    }

    /// Run `generation` of `task` for a session that asks about the network: it waits for
    /// it, then for its host's turn, in the run's task, and its route is followed.
    private func runAfterNetwork(_ task: SessionTask, generation: Int, handle: RunHandle, connectivity: ConnectivityRequirement) async {
        let observer = TaskObserver(task: task)
        var transfer: Transfer?
        do {
            let admitted = try await connectivity.admit(try prepareTransfer(of: task), task: task, observer: observer)
            transfer = admitted
            await run(task, generation: generation, transfer: admitted) {
                try await connectivity.following(admitted, stop: { handle.stop() }) {
                    try await engine.run(admitted, observer: observer, cancellingWith: { _ = handle.stop() })
                }
            }
        } catch {
            await ended(task, generation: generation, transfer: transfer, error: error)
        }
    }

    /// Run `generation` of `task`: `transfer` by `work`, in the task `handle` holds (the
    /// transfer's own, so the engine's time-outs stop it through the handle), then the task's end.
    private func run(_ task: SessionTask, generation: Int, transfer: Transfer, _ work: () async throws -> TransferResult) async {
        do {
            // A time-out racing the transfer's end may still stop this task after `work` returned:
            // what follows must not wait on anything cancellable.
            completed(task, generation: generation, with: try await work())
        } catch {
            await ended(task, generation: generation, transfer: transfer, error: error)
        }
    }

    /// Run `generation` of `task` ended with `result`: the task completes with it, unless a
    /// suspend or a later run made it not current.
    private func completed(_ task: SessionTask, generation: Int, with result: TransferResult) {
        task.lock.withLockedValue { $0.response = result.response }
        guard task.isCurrent(generation) else { return }
        task.didFinishTransfer(result)
        task.finish(error: nil, generation: generation)
    }

    /// Run `generation` of `task` failed with `error` (or was stopped): it completes with it,
    /// unless a suspend or a later run made it not current.
    private func ended(_ task: SessionTask, generation: Int, transfer: Transfer?, error: any Error) async {
        guard task.isCurrent(generation) else { return }
        // Cancelled by the user (not suspended): the server may free the upload.
        let point = task.lock.withLockedValue { $0.lifecycle.isCanceling ? $0.uploadPoint : nil }
        if let point, var transfer {
            transfer.resumeUpload = point
            await engine.discardUpload(of: transfer)
        }
        let mapped = task.errorForFailure(FerryError.from(error, url: task.originalRequest.url))
        task.finish(error: mapped, generation: generation)
    }

    func suspend(_ task: SessionTask) {
        let run = task.lock.withLockedValue { m in
            defer { m.run = nil }
            return m.run
        }
        run?.stop()
    }

    func cancel(_ task: SessionTask, running: Bool) {
        guard !running else {
            // The run deletes the upload resource, if any, before completing.
            task.lock.withLockedValue { $0.run }?.stop()
            return
        }
        // Suspended, nothing running: give up the upload resource of an earlier run.
        if let point = task.lock.withLockedValue({ $0.uploadPoint }), var transfer = try? task.makeTransfer() {
            transfer.resumeUpload = point
            let (engine, resource) = (self.engine, transfer)
            task.session.delegateQueue.spawn { await engine.discardUpload(of: resource) }
        }
        task.finish(error: task.cancellation(), generation: nil)
    }

    func invalidate(cancellingTasks: Bool) -> TaskRunnerInvalidation { .tasksEndHere }

    func shutdown() async {
        try? await engine.shutdown()
    }
}

/// A session whose engine could not be made (its TLS settings could not be loaded even
/// without the extra trust files): every task fails with that error when resumed.
struct UnavailableRunner: TaskRunner {
    let error: FerryError

    func reserveTaskIdentifier() -> Int? { nil }
    func start(_ task: SessionTask, generation: Int, isFirst: Bool) {
        task.finish(error: error, generation: generation)
    }
    func suspend(_ task: SessionTask) {}
    func cancel(_ task: SessionTask, running: Bool) {}  // its tasks complete when they start

    func invalidate(cancellingTasks: Bool) -> TaskRunnerInvalidation { .tasksEndHere }
    func shutdown() async {}
}

/// The Swift task of one in-process run, which suspend and cancel cancel. It is made before
/// the task exists (the task is noted as running first, so that a run that ends at once finds
/// it), and a stop that comes before the task does cancels it when it arrives.
package final class RunHandle: Sendable {
    private struct State {
        var cancel: (@Sendable () -> Void)?
        var stopped = false
    }
    private let state = Mutex(State())

    package init() {}

    package func attach<Success: Sendable>(_ task: Task<Success, Never>) {
        attach(stop: { task.cancel() })
    }

    /// From now on a stop calls `stop` (a run that has no task yet: its place in its host's
    /// queue is withdrawn); at once when the run was stopped already.
    package func attach(stop: @escaping @Sendable () -> Void) {
        let stopNow = state.withLock { state -> Bool in
            state.cancel = stop
            return state.stopped
        }
        if stopNow { stop() }
    }

    /// Stops the run; true when this was its first stop (a cancel, a suspend, a time-out or
    /// a lost route: whichever came first says why the run ended).
    @discardableResult
    package func stop() -> Bool {
        let (first, cancel) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            defer { state.stopped = true }
            return (!state.stopped, state.cancel)
        }
        cancel?()
        return first
    }
}
