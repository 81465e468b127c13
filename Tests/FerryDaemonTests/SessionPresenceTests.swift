@testable import FerryDaemon
import Testing

/// A session's state in ferryd's memory, as a value: its transitions without a daemon.
@Suite("Session presence")
struct SessionPresenceTests {
    @Test("one owner at a time; a watcher that takes the session stops watching; leaving releases it")
    func ownership() {
        var presence = SessionPresence()
        presence.watch(by: 1)
        let took = presence.take(by: 1)
        #expect(took)
        #expect(presence.watchers.isEmpty && presence.owner == 1)
        let second = presence.take(by: 2)
        #expect(!second, "a second owner is refused")
        presence.watch(by: 2)
        #expect(presence.progressTargets == [1, 2])
        presence.ownerAttached()
        presence.sent(upTo: 7)
        #expect(presence.delivered == 7)
        let again = presence.take(by: 1)
        #expect(again && presence.delivered == nil, "an owner attaching again gets events only after its new reply, from the start")
        presence.ownerAttached()
        presence.sent(upTo: 7)
        presence.stopDelivery()
        #expect(presence.owner == 1 && presence.delivered == nil, "invalidated: still the owner, no more events")
        presence.ownerAttached()
        presence.sent(upTo: 7)
        let watcherLeft = presence.disconnect(2)
        #expect(!watcherLeft, "a watcher leaving releases nothing")
        let ownerLeft = presence.disconnect(1)
        #expect(ownerLeft)
        #expect(presence.owner == nil && presence.delivered == nil, "events wait for a launch, from the start")
        #expect(presence.isIdle)
    }

    @Test("a job runs once at a time and once more when asked while it runs")
    func rerun() {
        var pump = Rerun()
        let first = pump.begin()
        let second = pump.begin()
        let third = pump.begin()
        #expect(first && !second && !third, "triggers while it runs do not start another")
        let round = pump.another()
        let done = !pump.another()
        #expect(round && done, "it goes round once more for the triggers, then it is done")
        #expect(pump.isIdle)
        let again = pump.begin()
        pump.again()
        let more = pump.another()
        #expect(again && more)
        pump.end()
        #expect(pump.isIdle, "a job that stops early is idle")
    }
}
