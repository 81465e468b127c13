import FerryEngine

/// The life of a task, as a value: each input returns what to do, and the task acts on it
/// outside its lock. Every fact about where a task is lives here, whichever runner does the
/// work (this process's engine, or ferryd).
///
/// Valid transitions:
/// ```
/// suspended ──resume──▶ running ──finished/failed──▶ completed
///    ▲  │                 │  │
///    │  └────cancel──┐    │  └──cancel──▶ canceling ──stopped──▶ completed
///    └───suspend─────┼────┘
///                    ▼
///                completed (cancelled)
/// ```
/// A task is created suspended. Suspending a running task stops its transfer; a download
/// keeps its partial file and continues from there on `resume()`.
struct TaskLifecycle {
    enum State: Equatable {
        case suspended
        case running(generation: Int)
        case canceling(generation: Int)
        case completed
    }

    enum Action {
        case none
        /// Start a transfer run tagged `generation`; `isFirst`: the task never ran before (a
        /// background task is submitted to ferryd then, and told to go on afterwards).
        case start(generation: Int, isFirst: Bool)
        /// The task cannot run: complete run `generation` with this error at once.
        case fail(generation: Int, FerryError)
        /// Stop the running transfer (its result will be ignored or turned into a pause).
        case stop
        /// Report completion with a cancellation error; nothing is running. `wasStarted`: it
        /// ran before and was suspended (ferryd has it, or the server keeps its upload).
        case completeCancelled(wasStarted: Bool)
    }

    private(set) var state: State = .suspended
    private var generation = 0
    /// Set when the task cannot run (its background session could not reserve it an
    /// identifier): the first `resume()` completes it with this.
    private var failure: FerryError?
    /// `cancelByProducingResumeData`: the cancellation should leave resume data.
    private(set) var cancelProducesResumeData = false

    /// Whether the task ever started (a background task is in ferryd from then on).
    var hasStarted: Bool { generation > 0 }

    /// The generation of the run now in progress, if any.
    var currentGeneration: Int? {
        switch state {
        case .running(let current), .canceling(let current): current
        case .suspended, .completed: nil
        }
    }

    /// Whether the run `generation` is still the task's (it was not suspended meanwhile).
    func isCurrent(_ generation: Int) -> Bool { currentGeneration == generation }

    var isCanceling: Bool {
        if case .canceling = state { return true }
        return false
    }

    mutating func failOnResume(_ error: FerryError) {
        failure = error
    }

    mutating func resume() -> Action {
        guard case .suspended = state else { return .none }
        generation += 1
        state = .running(generation: generation)
        if let failure { return .fail(generation: generation, failure) }
        return .start(generation: generation, isFirst: generation == 1)
    }

    /// Takes on a task another process started (one ferryd already carries): it has
    /// started, and unless ferryd has it suspended it is running here until its last event
    /// arrives. Nothing starts.
    mutating func adopt(suspended: Bool) {
        guard case .suspended = state, generation == 0 else { return }
        generation = 1
        if !suspended { state = .running(generation: generation) }
    }

    mutating func suspend() -> Action {
        guard case .running = state else { return .none }
        state = .suspended
        return .stop
    }

    mutating func cancel(producingResumeData: Bool = false) -> Action {
        switch state {
        case .suspended:
            state = .completed
            cancelProducesResumeData = producingResumeData
            return .completeCancelled(wasStarted: hasStarted)
        case .running(let generation):
            state = .canceling(generation: generation)
            cancelProducesResumeData = producingResumeData
            return .stop
        case .canceling, .completed:
            return .none
        }
    }

    /// A run ended. Returns true when its outcome is the task's (not a stale run that was
    /// suspended, and not already completed).
    mutating func runEnded(generation: Int) -> Bool {
        switch state {
        case .running(let current) where current == generation:
            state = .completed
            return true
        case .canceling(let current) where current == generation:
            state = .completed
            return true
        default:
            return false
        }
    }
}
