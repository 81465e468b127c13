@testable import FerryDaemon
import Testing

/// The read gate of one connection (`InboundFlow`), without a socket.
@Suite("Inbound flow")
struct InboundFlowTests {
    @Test("reads pass while fewer requests than the maximum wait; the read held at the limit is released by an answer")
    func heldAtTheLimit() {
        var flow = InboundFlow(maximumInFlight: 2)
        #expect(flow.readRequested() == .read)
        flow.arrived(2)
        #expect(flow.readRequested() == .wait)
        #expect(flow.served(1) == .read)
        #expect(flow.readRequested() == .read)
        #expect(flow.served(1) == .wait, "no read was held: nothing to release")
    }

    @Test("a full socket holds reads until it drains, whatever the count")
    func heldWhileAnswersWait() {
        var flow = InboundFlow(maximumInFlight: 10)
        #expect(flow.writabilityChanged(false) == .wait)
        #expect(flow.readRequested() == .wait)
        #expect(flow.served(0) == .wait)
        #expect(flow.writabilityChanged(true) == .read)
    }

    @Test("both conditions must clear before a held read goes on")
    func bothConditions() {
        var flow = InboundFlow(maximumInFlight: 1)
        flow.arrived(1)
        _ = flow.writabilityChanged(false)
        #expect(flow.readRequested() == .wait)
        #expect(flow.served(1) == .wait)
        #expect(flow.writabilityChanged(true) == .read)
        #expect(flow.inFlight == 0)
    }

    @Test("the heap is trimmed at once, then at most once a second with one trim after a burst")
    func heapTrimRate() {
        var trim = HeapTrim()
        let start = ContinuousClock.now
        #expect(trim.clientLeft(now: start) == .none)
        #expect(trim.clientLeft(now: start + .milliseconds(10)) == .trimLater)
        #expect(trim.clientLeft(now: start + .milliseconds(20)) == .none, "one trailing trim is enough")
        trim.trailingTrim(now: start + .seconds(1))
        #expect(trim.clientLeft(now: start + .seconds(1.5)) == .trimLater)
        #expect(trim.clientLeft(now: start + .seconds(3)) == .none)
    }
}
