@testable import Ferry
import Testing

/// When a background session acknowledges ferryd's events: only as far as their tasks are
/// settled here, so a process that leaves in the middle of a task leaves all of it to the next.
@Suite("Acknowledging events task by task")
struct EventSettlementTests {
    @Test("a task's response and body are acknowledged with its completion, not before")
    func responseWaitsForCompletion() {
        var settlement = EventSettlement()
        #expect(settlement.delivered(1, task: 7, settlesTask: false) == nil)   // response
        #expect(settlement.delivered(2, task: 7, settlesTask: false) == nil)   // data
        #expect(settlement.settled == 0, "leaving now hands the whole task to the next process")
        #expect(settlement.delivered(3, task: 7, settlesTask: true) == 3)      // completed
        #expect(settlement.settled == 3)
    }

    @Test("interleaved tasks: a finished task waits behind an open one's earlier event (acknowledgements are cumulative)")
    func interleavedTasks() {
        var settlement = EventSettlement()
        #expect(settlement.delivered(1, task: 1, settlesTask: false) == nil)   // task 1 response
        #expect(settlement.delivered(2, task: 2, settlesTask: false) == nil)   // task 2 response
        #expect(settlement.delivered(3, task: 2, settlesTask: true) == nil)    // task 2 completes, behind 1
        #expect(settlement.delivered(4, task: 1, settlesTask: true) == 4)      // task 1 completes: all of it
        #expect(settlement.delivered(5, task: 3, settlesTask: true) == 5)
    }

    @Test("an event no task here waits for, and a download's file handed over, settle at once")
    func settledAtOnce() {
        var settlement = EventSettlement()
        #expect(settlement.delivered(1, task: nil, settlesTask: false) == 1)
        #expect(settlement.delivered(2, task: 4, settlesTask: false) == nil)   // download response
        #expect(settlement.delivered(3, task: 4, settlesTask: true) == 3)      // file handed over
        #expect(settlement.delivered(4, task: 4, settlesTask: true) == 4)      // completion
    }
}
