/// Which delivered events may be acknowledged. A task's events are acknowledged only once the
/// event that settles it (its completion or failure, or a download's file handed over) was
/// delivered: a process that goes away in the middle of a task (an extension that exits right
/// after resume(), the response seen but not the completion) leaves *all* of the task's events
/// to the next process, which then sees the response, the body and the completion rather than
/// a completion without a response. A settled task's events are acknowledged at once, one by
/// one when an open task's event comes before them, so the next process never sees them again
/// (each event reaches the app once); the cumulative point is the end of the settled prefix.
struct EventSettlement {
    /// What to tell ferryd: everything up to `upTo`, and the single events after it.
    struct Acknowledgement: Equatable {
        var upTo: Int64
        var single: [Int64] = []

        /// This and `later` as one acknowledgement: the higher point, and the single events
        /// of both that lie after it.
        mutating func absorb(_ later: Acknowledgement) {
            upTo = max(upTo, later.upTo)
            single = Set(single + later.single).filter { $0 > upTo }.sorted()
        }
    }

    /// Events up to here may be acknowledged (and have been, when a delivery returned them).
    private(set) var settled: Int64 = 0
    /// Delivered events after `settled` whose task is not settled yet, oldest first.
    private var waiting: [(sequence: Int64, task: Int)] = []

    /// Records the delivery of event `sequence` of `task` (nil: nothing here waits for it);
    /// returns what may now be acknowledged, or nil when nothing new.
    mutating func delivered(_ sequence: Int64, task: Int?, settlesTask: Bool) -> Acknowledgement? {
        var ready: [Int64] = []
        if let task, !settlesTask {
            waiting.append((sequence, task))
        } else {
            ready.append(sequence)
            if let task {
                // The task has ended: its earlier events go with this one.
                ready += waiting.filter { $0.task == task }.map(\.sequence)
                waiting.removeAll { $0.task == task }
            }
        }
        guard !ready.isEmpty else { return nil }
        // Every delivered event below the oldest one still waiting is settled.
        let newest = ready.max() ?? settled
        let upTo = max(settled, waiting.first.map { min($0.sequence - 1, newest) } ?? newest)
        settled = upTo
        return Acknowledgement(upTo: upTo, single: ready.filter { $0 > upTo }.sorted())
    }
}

/// The acknowledgements of one session on their way to ferryd: one at a time, and those made
/// while it is on its way merged into the next, so a burst of events is a few writes in
/// ferryd rather than one each. Nothing waits on a timer: the next batch leaves when the
/// previous one is answered.
struct AcknowledgementLine {
    /// What leaves together, and whom to tell when ferryd answered it.
    struct Batch {
        var acknowledgement: EventSettlement.Acknowledgement
        var answered: [@Sendable () -> Void] = []
    }

    private var onItsWay = false
    private var next: Batch?
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    /// Queues `acknowledgement`; returns the batch to send now when none is on its way.
    mutating func add(_ acknowledgement: EventSettlement.Acknowledgement, answered: (@Sendable () -> Void)?) -> Batch? {
        let callbacks = answered.map { [$0] } ?? []
        guard onItsWay else {
            onItsWay = true
            return Batch(acknowledgement: acknowledgement, answered: callbacks)
        }
        if next == nil {
            next = Batch(acknowledgement: acknowledgement, answered: callbacks)
        } else {
            next!.acknowledgement.absorb(acknowledgement)
            next!.answered += callbacks
        }
        return nil
    }

    /// The batch on its way was answered: returns the next one to send, or, when none waits,
    /// the waiters for an empty line to resume.
    mutating func sent() -> (next: Batch?, idle: [CheckedContinuation<Void, Never>]) {
        if let waiting = next {
            next = nil
            return (waiting, [])
        }
        onItsWay = false
        defer { idleWaiters = [] }
        return (nil, idleWaiters)
    }

    /// True when the line is empty now; otherwise `waiter` is resumed once it is.
    mutating func waitUntilIdle(_ waiter: CheckedContinuation<Void, Never>) -> Bool {
        guard onItsWay else { return true }
        idleWaiters.append(waiter)
        return false
    }
}
