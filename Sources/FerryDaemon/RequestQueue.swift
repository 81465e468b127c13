import FerryCore
import FerryProtocol
import NIOConcurrencyHelpers

/// The requests read from one connection that the daemon has not taken yet. Reads add to it;
/// the daemon takes everything waiting at once. So the requests that arrived while it served
/// the last ones (most of that time is the commit's disk sync) are served together, and their
/// submissions share one transaction: commits are grouped by how busy the client is, with no
/// timer and no reordering.
final class RequestQueue: Sendable {
    typealias Batch = [(id: UInt64, request: FerryProtocol.Request)]

    private struct State {
        var waiting: Batch = []
        var finished = false
    }
    private let state = NIOLockedValueBox(State())
    private let added = Signal()

    /// Requests of one read, in order.
    func add(_ batch: Batch) {
        guard !batch.isEmpty else { return }
        state.withLockedValue { $0.waiting.append(contentsOf: batch) }
        added.signal()
    }

    /// The connection closed: `next()` returns what is left, then nil.
    func finish() {
        state.withLockedValue { $0.finished = true }
        added.signal()
    }

    /// Everything waiting, in order; waits for a read when nothing does. nil once the
    /// connection closed and all was taken, or when the calling task is cancelled.
    func next() async -> Batch? {
        // Each turn takes what waits or sleeps until an add or finish; bounded by the connection's life.
        while true {
            let (batch, finished) = state.withLockedValue { state -> (Batch, Bool) in
                defer { state.waiting = [] }
                return (state.waiting, state.finished)
            }
            if !batch.isEmpty { return batch }
            if finished || Task.isCancelled { return nil }
            await added.wait()
        }
    }
}
