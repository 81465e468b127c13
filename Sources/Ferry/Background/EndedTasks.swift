import NIOCore

/// The background tasks that ended in this process, until ferryd has acknowledged their end.
///
/// A reconnect before that acknowledgement lists such a task as not yet delivered (its
/// completion comes again), and it must not be mirrored as a running task again. Once ferryd
/// has the acknowledgement, its list says the task was delivered and the entry is not needed:
/// a session that lives for a million tasks holds only those whose end is on its way.
///
/// ```swift
/// var ended = EndedTasks()
/// ended.ended(7)                     // its completion callback returned, or it was cancelled here
/// ended.settled(7, bySequence: 120)  // ferryd's event that ends it
/// ended.acknowledged(upTo: 120)      // ferryd has the acknowledgement: 7 is forgotten
/// ```
struct EndedTasks {
    private var tasks: Set<Int> = []
    /// The ended tasks whose settling event is known, in the order the events came (their
    /// sequences ascend): forgotten once an acknowledgement reaches past them.
    private var settling = CircularBuffer<(sequence: Int64, task: Int)>()

    func contains(_ task: Int) -> Bool { tasks.contains(task) }

    /// How many are kept.
    var count: Int { tasks.count }

    mutating func ended(_ task: Int) {
        tasks.insert(task)
    }

    /// Event `sequence`, which ends `task` in ferryd, was delivered here. Its task may end
    /// here a little later (its callbacks run on the delegate queue), but before the event is
    /// acknowledged: ferryd hears of a task's events only once the task ended here.
    mutating func settled(_ task: Int, bySequence sequence: Int64) {
        settling.append((sequence, task))
    }

    /// ferryd answered an acknowledgement of events up to `sequence`.
    mutating func acknowledged(upTo sequence: Int64) {
        while let first = settling.first, first.sequence <= sequence {
            settling.removeFirst()
            tasks.remove(first.task)
        }
    }
}
