@testable import Ferry
import Testing

/// When a background session acknowledges ferryd's events: a task's events only once the task
/// is settled here, so a process that leaves in the middle of a task leaves all of it to the
/// next; and a settled task's events at once, so the next process never sees them again.
@Suite("Acknowledging events task by task")
struct EventSettlementTests {
    typealias Ack = EventSettlement.Acknowledgement

    @Test("a task's response and body are acknowledged with its completion, not before")
    func responseWaitsForCompletion() {
        var settlement = EventSettlement()
        #expect(settlement.delivered(1, task: 7, settlesTask: false) == nil)   // response
        #expect(settlement.delivered(2, task: 7, settlesTask: false) == nil)   // data
        #expect(settlement.settled == 0, "leaving now hands the whole task to the next process")
        #expect(settlement.delivered(3, task: 7, settlesTask: true) == Ack(upTo: 3))  // completed
        #expect(settlement.settled == 3)
    }

    @Test("interleaved tasks: a task that ends behind an open one's event is acknowledged event by event")
    func interleavedTasks() {
        var settlement = EventSettlement()
        #expect(settlement.delivered(1, task: 1, settlesTask: false) == nil)   // task 1 response
        #expect(settlement.delivered(2, task: 2, settlesTask: false) == nil)   // task 2 response
        // Task 2 completes: its two events go now, singly; task 1's response stays.
        #expect(settlement.delivered(3, task: 2, settlesTask: true) == Ack(upTo: 0, single: [2, 3]))
        #expect(settlement.settled == 0)
        // Task 1 completes: everything up to 4.
        #expect(settlement.delivered(4, task: 1, settlesTask: true) == Ack(upTo: 4))
        #expect(settlement.delivered(5, task: 3, settlesTask: true) == Ack(upTo: 5))
    }

    @Test("the cumulative point stops just below the oldest open task's event")
    func pointBelowOpenTask() {
        var settlement = EventSettlement()
        #expect(settlement.delivered(1, task: 1, settlesTask: true) == Ack(upTo: 1))
        #expect(settlement.delivered(2, task: 2, settlesTask: false) == nil)
        #expect(settlement.delivered(3, task: 3, settlesTask: false) == nil)
        #expect(settlement.delivered(4, task: 3, settlesTask: true) == Ack(upTo: 1, single: [3, 4]))
        #expect(settlement.delivered(5, task: nil, settlesTask: false) == Ack(upTo: 1, single: [5]))
        #expect(settlement.delivered(6, task: 2, settlesTask: true) == Ack(upTo: 6))
    }

    @Test("an event no task here waits for, and a download's file handed over, settle at once")
    func settledAtOnce() {
        var settlement = EventSettlement()
        #expect(settlement.delivered(1, task: nil, settlesTask: false) == Ack(upTo: 1))
        #expect(settlement.delivered(2, task: 4, settlesTask: false) == nil)   // download response
        #expect(settlement.delivered(3, task: 4, settlesTask: true) == Ack(upTo: 3))   // file handed over
        #expect(settlement.delivered(4, task: 4, settlesTask: true) == Ack(upTo: 4))   // completion
    }
}
