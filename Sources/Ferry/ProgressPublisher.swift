import Foundation
import Synchronization

/// Brings tasks' `Progress` up to date on ``SessionTask/progressQueue``, many tasks in one
/// turn of the queue. A task's counters change several times for one small file (response,
/// bytes written, end), and a block queued for each change woke a thread each time: the
/// queue's turn reads each waiting task's latest counters instead.
final class ProgressPublisher: Sendable {
    static let shared = ProgressPublisher()

    /// Tasks whose progress is behind; not empty: a turn of the queue is asked for.
    private let waiting = Mutex<[ObjectIdentifier: SessionTask]>([:])

    /// `task`'s progress is updated by a block queued before this returns (or by one already
    /// queued that has not yet taken the waiting tasks).
    func needsUpdate(_ task: SessionTask) {
        let queueTurn = waiting.withLock { waiting in
            let first = waiting.isEmpty
            waiting[ObjectIdentifier(task)] = task
            return first
        }
        if queueTurn { SessionTask.progressQueue.async { self.publish() } }
    }

    private func publish() {
        let tasks = waiting.withLock { waiting in
            defer { waiting = [:] }
            return Array(waiting.values)
        }
        for task in tasks { task.publishProgress() }
    }
}
