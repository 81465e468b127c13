@testable import FerryDaemon
@testable import FerryStore
import Foundation
import Testing

/// The memory of committed events: it answers only when it cannot have missed one.
@Suite("Event outbox")
struct EventOutboxTests {
    func record(_ sequence: Int64, _ session: String = "s", payload: String = #"{"type":"completed"}"#) -> EventRecord {
        EventRecord(sequence: sequence, sessionIdentifier: session, taskIdentifier: 1, kind: "completed", payload: payload, createdAt: Date())
    }

    func commit(_ records: [EventRecord], to outbox: EventOutbox) -> [String] {
        outbox.committed(CommittedEvents(events: records, committedAt: Date()))
    }

    /// The sequences memory answers with; nil when the pump must read the store.
    func taken(_ outbox: EventOutbox, _ session: String, after: Int64) -> [Int64]? {
        switch outbox.take(session, after: after) {
        case .readStore: nil
        case .events(let held, _): held.map(\.record.sequence)
        case .live: [-1]
        }
    }

    @Test("nothing is answered from memory until a read of the store reached its end while memory filled")
    func coverage() {
        let outbox = EventOutbox()
        #expect(commit([record(1), record(2, "t"), record(3)], to: outbox) == ["s", "t"], "every session is woken, covered or not")
        #expect(taken(outbox, "s", after: 0) == nil, "never covered: read the store")
        #expect(outbox.counts.events == 0, "an uncovered session's events are not kept")

        outbox.cover("s")  // the pump starts its read
        _ = commit([record(4), record(5)], to: outbox)  // committed while it reads
        #expect(taken(outbox, "s", after: 3) == nil, "the read has not finished")
        outbox.covered("s", through: 4)  // the read saw up to 4
        #expect(taken(outbox, "s", after: 2) == nil, "a cursor before the read's end would skip stored events")
        #expect(taken(outbox, "s", after: 4) == [5], "what the read saw is not sent twice")
        #expect(outbox.counts.events == 0 && outbox.counts.bytes == 0)

        _ = commit([record(6), record(7, "t"), record(8)], to: outbox)
        #expect(taken(outbox, "s", after: 5) == [6, 8])
        #expect(taken(outbox, "s", after: 8) == [])
        #expect(taken(outbox, "t", after: 0) == nil)
    }

    @Test("past its byte limit, or when dropped, a session reads the store again")
    func bounds() {
        let outbox = EventOutbox(byteLimit: 100)
        outbox.cover("s")
        outbox.covered("s", through: 0)
        _ = commit([record(1, payload: String(repeating: "x", count: 60))], to: outbox)
        #expect(outbox.counts.bytes == 60)
        _ = commit([record(2, payload: String(repeating: "y", count: 60))], to: outbox)
        #expect(taken(outbox, "s", after: 0) == nil, "the session's memory went when it would pass the limit")
        #expect(outbox.counts == (0, 0, 0, 0))

        // Past the bound while the pump's read is under way: what commits after is not kept
        // either, so the read's end does not vouch for memory with a hole in it.
        outbox.cover("s")
        _ = commit([record(37, payload: String(repeating: "a", count: 60)), record(38, payload: String(repeating: "b", count: 60)), record(39)], to: outbox)
        outbox.covered("s", through: 36)
        #expect(taken(outbox, "s", after: 36) == nil, "37 went with the memory: the store is read")

        outbox.cover("s")
        outbox.covered("s", through: 2)
        _ = commit([record(3)], to: outbox)
        outbox.drop("s")
        #expect(taken(outbox, "s", after: 2) == nil)
        #expect(outbox.counts.events == 0 && outbox.counts.bytes == 0)
    }
}
