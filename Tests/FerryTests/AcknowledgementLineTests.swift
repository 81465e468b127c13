@testable import Ferry
import Synchronization
import Testing

/// A background session's acknowledgements leave one at a time; those made while one is on its
/// way leave together after it, merged, and every caller hears of the batch that carried it.
@Suite("Acknowledgements, one on its way at a time")
struct AcknowledgementLineTests {
    typealias Ack = EventSettlement.Acknowledgement

    @Test("merging keeps the higher point and the single events after it")
    func absorb() {
        var ack = Ack(upTo: 0, single: [2, 3])
        ack.absorb(Ack(upTo: 0, single: [5]))
        #expect(ack == Ack(upTo: 0, single: [2, 3, 5]))
        ack.absorb(Ack(upTo: 4))
        #expect(ack == Ack(upTo: 4, single: [5]), "2 and 3 are inside the point now")
        ack.absorb(Ack(upTo: 2, single: [5, 9]))
        #expect(ack == Ack(upTo: 4, single: [5, 9]), "an older, lower point does not move it back")
    }

    @Test("the first leaves at once; the ones made meanwhile leave as one batch when it is answered; then the line is idle")
    func batches() {
        let heard = Mutex<[String]>([])
        func callback(_ name: String) -> @Sendable () -> Void { { heard.withLock { $0.append(name) } } }
        var line = AcknowledgementLine()
        let first = line.add(Ack(upTo: 1), answered: callback("a"))
        #expect(first?.acknowledgement == Ack(upTo: 1))
        #expect(line.add(Ack(upTo: 1, single: [3]), answered: callback("b")) == nil, "one is on its way")
        #expect(line.add(Ack(upTo: 4), answered: nil) == nil)
        #expect(line.add(Ack(upTo: 4, single: [6]), answered: callback("c")) == nil)

        for call in first?.answered ?? [] { call() }
        let (next, idle) = line.sent()
        #expect(idle.isEmpty)
        #expect(next?.acknowledgement == Ack(upTo: 4, single: [6]))
        for call in next?.answered ?? [] { call() }
        #expect(heard.withLock { $0 } == ["a", "b", "c"])

        let (none, _) = line.sent()
        #expect(none == nil, "nothing waits: the line is idle")
        #expect(line.add(Ack(upTo: 7), answered: nil)?.acknowledgement == Ack(upTo: 7), "and the next leaves at once")
    }
}
