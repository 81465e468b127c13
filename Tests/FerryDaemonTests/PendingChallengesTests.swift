@testable import FerryDaemon
import FerryEngine
import Testing

/// The waiting room of challenges asked of apps: each settled exactly once, by its owner's
/// answer, its connection closing, or its transfer giving up, in whichever order they come.
@Suite("PendingChallenges")
struct PendingChallengesTests {
    @Test("an answer from the asked connection settles it; another connection's, another session's or a second answer does not")
    func answeredOnce() async {
        let pending = PendingChallenges()
        let id = pending.open(connection: 7, session: "s")
        #expect(!pending.settle(id, with: .cancel, from: 8, session: "s"))
        #expect(!pending.settle(id, with: .cancel, from: 7, session: "other"))
        #expect(pending.settle(id, with: .rejectProtectionSpace, from: 7, session: "s"), "settled before anyone waits: kept for the waiter")
        #expect(!pending.settle(id, with: .cancel, from: 7, session: "s"), "a second answer")
        guard case .rejectProtectionSpace = await pending.answer(id) else { Issue.record("the first answer is the one"); return }
        #expect(pending.count == 0)
    }

    @Test("a closed connection settles its challenges with the default, not another connection's")
    func connectionClosed() async {
        let pending = PendingChallenges()
        let mine = pending.open(connection: 1, session: "s")
        let theirs = pending.open(connection: 2, session: "t")
        async let answer = pending.answer(mine)
        try? await Task.sleep(for: .milliseconds(20))
        pending.connectionClosed(1)
        guard case .performDefaultHandling = await answer else { Issue.record("expected the default"); return }
        #expect(pending.count == 1)
        #expect(pending.settle(theirs, with: .cancel, from: 2, session: "t"))
    }

    @Test("a session its owner let go: its challenges get the default, other sessions' wait on")
    func sessionReleased() async {
        let pending = PendingChallenges()
        let released = pending.open(connection: 4, session: "gone")
        let other = pending.open(connection: 4, session: "kept")
        async let answer = pending.answer(released)
        try? await Task.sleep(for: .milliseconds(20))
        pending.sessionReleased("gone")
        guard case .performDefaultHandling = await answer else { Issue.record("expected the default"); return }
        #expect(pending.count == 1)
        #expect(pending.settle(other, with: .cancel, from: 4, session: "kept"))
    }

    @Test("a waiter cancelled (its transfer timed out) gets the default, and the late answer is refused")
    func cancelled() async {
        let pending = PendingChallenges()
        let id = pending.open(connection: 3, session: "s")
        let waiter = Task { await pending.answer(id) }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        guard case .performDefaultHandling = await waiter.value else { Issue.record("expected the default"); return }
        #expect(!pending.settle(id, with: .useCredential(Credential(user: "u", password: "p")), from: 3, session: "s"))
        #expect(pending.count == 0)
    }
}
