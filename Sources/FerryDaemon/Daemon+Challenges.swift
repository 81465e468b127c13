import FerryCore
import FerryEngine
import FerryProtocol
import Foundation
import Synchronization

/// The authentication challenges that wait for their apps' answers: each a transfer suspended
/// in the engine until its session's owner answers (``Request/answerChallenge(_:)``), the
/// transfer gives up (its request time-out, a cancel), or the owner's connection closes. Then
/// the transfer goes on with the answer, or with ferryd's default handling. A lock, not the
/// daemon's actor: a cancellation must settle its challenge at once, from any thread.
final class PendingChallenges: Sendable {
    private struct Waiting {
        let connection: UInt64
        let session: String
        let task: Int
        /// What `ferry explain` says of the task meanwhile.
        let reason: WaitingReason
        var continuation: CheckedContinuation<ChallengeAnswer, Never>?
        /// Given up before the continuation was there (a cancel in that moment).
        var settled: ChallengeAnswer?
    }

    private struct State {
        var waiting: [UInt64: Waiting] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    /// A new challenge's number, noted as waiting for `connection`'s answer about `task` of
    /// `session`, which waits meanwhile for `reason`.
    func open(connection: UInt64, session: String, task: Int, reason: WaitingReason) -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            state.waiting[state.nextID] = Waiting(connection: connection, session: session, task: task, reason: reason)
            return state.nextID
        }
    }

    /// Why `task` of `session` waits, while a challenge of its waits for its app's answer.
    func waitingReason(session: String, task: Int) -> WaitingReason? {
        state.withLock { state in
            state.waiting.values.first { $0.session == session && $0.task == task && $0.settled == nil }?.reason
        }
    }

    /// Waits for challenge `id`'s answer; cancelling the caller settles it with the default.
    func answer(_ id: UInt64) async -> ChallengeAnswer {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ChallengeAnswer, Never>) in
                let now = state.withLock { state -> ChallengeAnswer? in
                    guard var entry = state.waiting[id] else { return .performDefaultHandling }
                    if let settled = entry.settled {
                        state.waiting[id] = nil
                        return settled
                    }
                    entry.continuation = continuation
                    state.waiting[id] = entry
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            settle([id], with: .performDefaultHandling)
        }
    }

    /// The owner answered: false when no challenge `id` of `session` waits for `connection`.
    func settle(_ id: UInt64, with answer: ChallengeAnswer, from connection: UInt64, session: String) -> Bool {
        settle([id], with: answer) { $0.connection == connection && $0.session == session } > 0
    }

    /// Every challenge asked of `connection` gets the default: it closed.
    func connectionClosed(_ connection: UInt64) {
        settle(nil, with: .performDefaultHandling) { $0.connection == connection }
    }

    /// Every challenge of `session` gets the default: its owner let it go (its answer would
    /// now be refused as not the owner's).
    func sessionReleased(_ session: String) {
        settle(nil, with: .performDefaultHandling) { $0.session == session }
    }

    /// Forgets challenge `id`, which was never asked (its message could not be sent).
    func discard(_ id: UInt64) {
        _ = state.withLock { $0.waiting.removeValue(forKey: id) }
    }

    /// How many challenges wait (for tests and status).
    var count: Int { state.withLock { $0.waiting.count } }

    /// Settles the challenges `ids` (nil: all) that `matches` and that are not settled yet,
    /// in one look under the lock, and returns how many. A waiter is resumed (outside the
    /// lock); one that has not come yet finds the answer in `answer(_:)`.
    @discardableResult
    private func settle(_ ids: [UInt64]?, with answer: ChallengeAnswer, where matches: (Waiting) -> Bool = { _ in true }) -> Int {
        let (settled, waiters) = state.withLock { state -> (Int, [CheckedContinuation<ChallengeAnswer, Never>]) in
            var settled = 0
            var waiters: [CheckedContinuation<ChallengeAnswer, Never>] = []
            for id in ids ?? Array(state.waiting.keys) {
                guard var entry = state.waiting[id], entry.settled == nil, matches(entry) else { continue }
                settled += 1
                if let continuation = entry.continuation {
                    state.waiting[id] = nil
                    waiters.append(continuation)
                } else {
                    entry.settled = answer
                    state.waiting[id] = entry
                }
            }
            return (settled, waiters)
        }
        for waiter in waiters { waiter.resume(returning: answer) }
        return settled
    }
}

/// Owners attaching to their sessions, counted per session, for a challenge that waits for
/// the app ferryd started to answer it. A count, not a flag: an owner that attaches between a
/// look and a wait is not missed. A lock, so that a cancelled transfer stops waiting at once.
final class OwnerArrivals: Sendable {
    private struct State {
        var arrivals: [String: Int] = [:]
        var waiters: [UInt64: (session: String, after: Int, continuation: CheckedContinuation<Bool, Never>)] = [:]
        var nextWaiter: UInt64 = 0
    }
    private let state = Mutex(State())

    /// Owners of `session` attached so far.
    func count(_ session: String) -> Int { state.withLock { $0.arrivals[session, default: 0] } }

    /// An owner attached to `session`.
    func arrived(_ session: String) {
        let waking = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.arrivals[session, default: 0] += 1
            let count = state.arrivals[session]!
            let due = state.waiters.filter { $0.value.session == session && count > $0.value.after }
            for id in due.keys { state.waiters[id] = nil }
            return due.values.map(\.continuation)
        }
        for waiter in waking { waiter.resume(returning: true) }
    }

    /// Waits until more than `after` owners of `session` have attached (true), for at most
    /// `limit` or until the caller is cancelled (false).
    func wait(_ session: String, after: Int, within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { race in
            race.addTask { await self.arrival(session, after: after) }
            race.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await race.next() ?? false
            race.cancelAll()
            return first
        }
    }

    /// Returns true once more than `after` owners of `session` attached, false if cancelled.
    private func arrival(_ session: String, after: Int) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool? in
                    if state.arrivals[session, default: 0] > after { return true }
                    if Task.isCancelled { return false }
                    state.waiters[id] = (session, after, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            give(up: id)
        }
    }

    private func give(up id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
    }
}

/// `eventsFinished` tells an app that it may go (it calls its completion handler, and an app
/// ferryd started exits): it must not come while one of the session's authentication
/// challenges is still to be asked of the app or answered, or the app leaves without
/// answering and the transfer gets ferryd's default. Each challenge holds its session from
/// the moment ferryd takes it up until it is settled; an `eventsFinished` due meanwhile is
/// owed, and goes when the session's last hold ends, after the answer. A lock: the store's
/// writer (live events) and the daemon's actor (its pump) both ask.
///
/// ```swift
/// hold.hold(session)                          // a challenge of the session is taken up
/// if hold.mayFinish(session) { send(finished) }   // false now: owed
/// if hold.release(session) { send(finished) }     // the answer came: the owed one goes
/// ```
final class EventsFinishedHold: Sendable {
    private struct State {
        var holds: [String: Int] = [:]
        var owed: Set<String> = []
    }
    private let state = Mutex(State())

    func hold(_ session: String) {
        state.withLock { $0.holds[session, default: 0] += 1 }
    }

    /// Ends one hold of `session`; true when it was the last and an `eventsFinished` is owed
    /// (the caller sends it to the owner, if there is one).
    func release(_ session: String) -> Bool {
        state.withLock { state in
            let left = state.holds[session, default: 1] - 1
            state.holds[session] = left > 0 ? left : nil
            return left <= 0 && state.owed.remove(session) != nil
        }
    }

    /// Whether an `eventsFinished` of `session` may go now; if not, it is owed.
    func mayFinish(_ session: String) -> Bool {
        state.withLock { state in
            guard state.holds[session] != nil else { return true }
            state.owed.insert(session)
            return false
        }
    }
}

extension Daemon {
    /// What to do about a background task's authentication challenge: its session's owner is
    /// asked when it said it answers challenges (the app's delegate), and the transfer waits
    /// for the answer. When nobody owns the session, ferryd starts its app as it would for
    /// events (``launchToAnswerChallenge(_:)``) and asks it once it attaches, as the platform
    /// does. Otherwise, or when the owner leaves first, ferryd's default (the credential
    /// submitted for the realm, or the URL's, once).
    nonisolated func answer(_ challenge: AuthenticationChallenge, of key: TaskKey) async -> ChallengeAnswer {
        finishHold.hold(key.session)
        let answer = await answerHoldingFinish(challenge, of: key)
        if finishHold.release(key.session) { await sendEventsFinished(key.session) }
        return answer
    }

    /// `eventsFinished` of `session` (the pump's, or one a challenge held), to its owner if it has one.
    func sendEventsFinished(_ session: String) {
        guard let owner = owner(of: session), let connection = connections[owner] else { return }
        connection.send(.eventsFinished(sessionIdentifier: session))
    }

    /// ``answer(_:of:)`` while the session's `eventsFinished` is held.
    private nonisolated func answerHoldingFinish(_ challenge: AuthenticationChallenge, of key: TaskKey) async -> ChallengeAnswer {
        var asked = await askOwner(challenge, of: key)
        if asked == nil {
            let seen = ownerArrivals.count(key.session)
            if await launchToAnswerChallenge(key.session),
                await ownerArrivals.wait(key.session, after: seen, within: .seconds(configuration.launchConnectTimeout))
            {
                asked = await askOwner(challenge, of: key)
            }
        }
        guard let id = asked else { return .performDefaultHandling }
        let answer = await challenges.answer(id)
        logger.debug("challenge answered", metadata: ["session": "\(key.session)", "task": "\(key.task)", "answer": "\(answer.name)"])
        return answer
    }

    /// Sends the challenge to the session's owner; its number, or nil when nobody is asked.
    private func askOwner(_ challenge: AuthenticationChallenge, of key: TaskKey) -> UInt64? {
        guard let owner = owner(of: key.session), let connection = connections[owner], connection.hello?.answersChallenges == true
        else { return nil }
        let space = challenge.protectionSpace
        let realm = space.realm.map { "realm \"\($0)\" of " } ?? ""
        let reason = WaitingReason(
            kind: .authenticationChallenge, host: space.host,
            message: "waits for its app to answer an authentication challenge (\(space.method.rawValue), \(realm)\(space.host))")
        let id = challenges.open(connection: owner, session: key.session, task: key.task, reason: reason)
        let sent = connection.send(.challenge(TaskChallenge(
            challengeID: id, sessionIdentifier: key.session, taskIdentifier: key.task, scheme: space.scheme, host: space.host,
            port: space.port, realm: space.realm, method: space.method.rawValue, previousFailureCount: challenge.previousFailureCount,
            statusCode: challenge.failureResponse.statusCode, headers: challenge.failureResponse.headers,
            proposedCredential: challenge.proposedCredential.map { ChallengeCredential(user: $0.user, password: $0.password) })))
        guard sent else {
            challenges.discard(id)  // the connection is closing: nobody will answer
            return nil
        }
        return id
    }

    /// The owner's answer to challenge `reply.challengeID`.
    func answerChallenge(_ reply: ChallengeReply, from connection: ClientConnection) throws(FerryProtocolError) -> Reply {
        let answer: ChallengeAnswer = switch reply.disposition {
        case .useCredential: reply.credential.map { .useCredential(Credential(user: $0.user, password: $0.password)) } ?? .performDefaultHandling
        case .performDefaultHandling: .performDefaultHandling
        case .cancelAuthenticationChallenge: .cancel
        case .rejectProtectionSpace: .rejectProtectionSpace
        }
        guard challenges.settle(reply.challengeID, with: answer, from: connection.id, session: reply.sessionIdentifier) else {
            throw FerryProtocolError(.unknownChallenge, "no challenge \(reply.challengeID) of \(reply.sessionIdentifier) waits for this connection's answer")
        }
        return .challengeAnswered(challengeID: reply.challengeID)
    }
}

extension ChallengeAnswer {
    /// For logs: never the credential.
    var name: String {
        switch self {
        case .useCredential: "useCredential"
        case .performDefaultHandling: "performDefaultHandling"
        case .cancel: "cancel"
        case .rejectProtectionSpace: "rejectProtectionSpace"
        }
    }
}
