@testable import FerryDaemon
import FerryEngine
import FerryProtocol
import Testing

/// The waiting room of challenges asked of apps: each settled exactly once, by its owner's
/// answer, its connection closing, or its transfer giving up, in whichever order they come.
@Suite("PendingChallenges")
struct PendingChallengesTests {
    static let reason = WaitingReason(kind: .authenticationChallenge, host: "example.com", message: "waits for its app")

    @Test("a task says it waits for its app while its challenge is open, and no longer once it is settled")
    func waitingReason() async {
        let pending = PendingChallenges()
        let id = pending.open(connection: 7, session: "s", task: 4, reason: Self.reason)
        #expect(pending.waitingReason(session: "s", task: 4) == Self.reason)
        #expect(pending.waitingReason(session: "s", task: 5) == nil && pending.waitingReason(session: "t", task: 4) == nil)
        #expect(pending.settle(id, with: .performDefaultHandling, from: 7, session: "s"))
        #expect(pending.waitingReason(session: "s", task: 4) == nil, "settled: its transfer goes on")
    }

    @Test("an answer from the asked connection settles it; another connection's, another session's or a second answer does not")
    func answeredOnce() async {
        let pending = PendingChallenges()
        let id = pending.open(connection: 7, session: "s", task: 1, reason: Self.reason)
        #expect(!pending.settle(id, with: .cancel, from: 8, session: "s"))
        #expect(!pending.settle(id, with: .cancel, from: 7, session: "other"))
        #expect(pending.settle(id, with: .rejectProtectionSpace, from: 7, session: "s"), "settled before anyone waits: kept for the waiter")
        #expect(!pending.settle(id, with: .cancel, from: 7, session: "s"), "a second answer")
        guard case .rejectProtectionSpace = await pending.answer(id) else { Issue.record("the first answer is the one"); return }
        #expect(pending.count == 0)
    }

    /// How an owner stops being able to answer.
    enum Leaving: CaseIterable, Sendable {
        /// Its connection closes: the challenges asked of it go, another connection's stay.
        case connectionClosed
        /// It lets the session go on an open connection: that session's go, another session's stay.
        case sessionReleased

        /// The challenge that must get the default and the one that must wait on, as (connection, session).
        var asked: (leaving: (UInt64, String), staying: (UInt64, String)) {
            switch self {
            case .connectionClosed: ((1, "s"), (2, "t"))
            case .sessionReleased: ((4, "gone"), (4, "kept"))
            }
        }

        func leave(_ pending: PendingChallenges) {
            switch self {
            case .connectionClosed: pending.connectionClosed(1)
            case .sessionReleased: pending.sessionReleased("gone")
            }
        }
    }

    @Test("an owner that closes its connection or lets the session go: those challenges get the default, the others wait on", arguments: Leaving.allCases)
    func ownerLeaves(_ leaving: Leaving) async {
        let pending = PendingChallenges()
        let (gone, kept) = leaving.asked
        let leavingID = pending.open(connection: gone.0, session: gone.1, task: 1, reason: Self.reason)
        let stayingID = pending.open(connection: kept.0, session: kept.1, task: 2, reason: Self.reason)
        async let answer = pending.answer(leavingID)
        try? await Task.sleep(for: .milliseconds(20))
        leaving.leave(pending)
        guard case .performDefaultHandling = await answer else { Issue.record("expected the default"); return }
        #expect(pending.count == 1)
        #expect(pending.settle(stayingID, with: .cancel, from: kept.0, session: kept.1))
    }

    @Test("a waiter cancelled (its transfer timed out) gets the default, and the late answer is refused")
    func cancelled() async {
        let pending = PendingChallenges()
        let id = pending.open(connection: 3, session: "s", task: 1, reason: Self.reason)
        let waiter = Task { await pending.answer(id) }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        guard case .performDefaultHandling = await waiter.value else { Issue.record("expected the default"); return }
        #expect(!pending.settle(id, with: .useCredential(Credential(user: "u", password: "p")), from: 3, session: "s"))
        #expect(pending.count == 0)
    }
}

/// Waiting for a session's app to attach, for a challenge ferryd started it to answer.
@Suite("OwnerArrivals")
struct OwnerArrivalsTests {
    @Test("a wait ends with the next owner of its session, at once for one that came since the count, and false at its limit or when cancelled")
    func waits() async {
        let arrivals = OwnerArrivals()
        let seen = arrivals.count("s")
        async let waited = arrivals.wait("s", after: seen, within: .seconds(10))
        try? await Task.sleep(for: .milliseconds(50))
        arrivals.arrived("other")
        arrivals.arrived("s")
        #expect(await waited, "the owner of s came")

        let before = arrivals.count("s")
        arrivals.arrived("s")  // between the look and the wait: not missed
        #expect(await arrivals.wait("s", after: before, within: .seconds(10)))

        let start = ContinuousClock.now
        #expect(await !arrivals.wait("s", after: arrivals.count("s"), within: .milliseconds(100)), "nobody came")
        #expect(ContinuousClock.now - start < .seconds(5))

        let cancelled = Task { await arrivals.wait("s", after: arrivals.count("s"), within: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        #expect(await !cancelled.value, "a cancelled transfer stops waiting")
    }
}

/// `eventsFinished` held while a session's challenges wait.
@Suite("EventsFinishedHold")
struct EventsFinishedHoldTests {
    @Test("a held session's eventsFinished is owed, once, and due when its last hold ends; other sessions are free; a release with nothing owed owes nothing")
    func holds() {
        let hold = EventsFinishedHold()
        #expect(hold.mayFinish("s"))
        hold.hold("s")
        hold.hold("s")
        #expect(!hold.mayFinish("s"))
        #expect(!hold.mayFinish("s"), "owed once, however often it was due")
        #expect(hold.mayFinish("other"))
        #expect(!hold.release("s"), "one hold is left")
        #expect(hold.release("s"), "the last: the owed one goes")
        #expect(hold.mayFinish("s"))
        hold.hold("s")
        #expect(!hold.release("s"), "nothing was owed")
    }
}
