/// The life of a task, as a value: each input returns what to do, and the task acts on it
/// outside its lock.
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

    enum Action: Equatable {
        case none
        /// Start a transfer run tagged `generation`.
        case start(generation: Int)
        /// Stop the running transfer (its result will be ignored or turned into a pause).
        case stop
        /// Report completion with a cancellation error, nothing is running.
        case completeCancelled
    }

    private(set) var state: State = .suspended
    private var generation = 0

    mutating func resume() -> Action {
        guard case .suspended = state else { return .none }
        generation += 1
        state = .running(generation: generation)
        return .start(generation: generation)
    }

    mutating func suspend() -> Action {
        guard case .running = state else { return .none }
        state = .suspended
        return .stop
    }

    mutating func cancel() -> Action {
        switch state {
        case .suspended:
            state = .completed
            return .completeCancelled
        case .running(let generation):
            state = .canceling(generation: generation)
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
