import FerryApps
import Foundation

/// One session as ferryd holds it in memory: who owns it and who watches it, how far its
/// events went to the owner, whether a delivery pump or a launch check is running (and must
/// look again), and its launch backoff. One value with its transitions, one per session
/// (`Daemon.sessions`); a restart loses it, which is right: every connection goes too.
struct SessionPresence: Sendable {
    /// The connection that owns the session, if any.
    private(set) var owner: UInt64?
    private(set) var watchers: Set<UInt64> = []
    /// The last event sequence sent to the owner; nil until its `attached` reply is out, so
    /// no event overtakes that reply.
    private(set) var delivered: Int64?
    /// The event pump: one at a time, looking again when events arrive while it runs.
    var pump = Rerun()
    /// The launch check: one at a time, so two triggers cannot launch twice.
    var launchCheck = Rerun()
    /// Launches made for undelivered events and when the next may happen.
    var launch: LaunchState?

    /// Nothing to keep: the entry can go.
    var isIdle: Bool { owner == nil && watchers.isEmpty && delivered == nil && pump.isIdle && launchCheck.isIdle && launch == nil }

    /// `connection` becomes the owner (it stops being a watcher). False when another owns it.
    /// Events wait for its `attached` reply, even when it owned the session already: an
    /// owner attaching again gets every event again, after that reply.
    mutating func take(by connection: UInt64) -> Bool {
        if let owner, owner != connection { return false }
        owner = connection
        watchers.remove(connection)
        delivered = nil
        return true
    }

    /// No more events to the owner, which stays the owner (its `invalidated` reply is on its way).
    mutating func stopDelivery() { delivered = nil }

    /// `connection` watches (unless it owns the session).
    mutating func watch(by connection: UInt64) {
        if owner != connection { watchers.insert(connection) }
    }

    /// The owner's `attached` reply is out: events may follow, from the first undelivered.
    mutating func ownerAttached() { delivered = 0 }

    /// An event up to `sequence` went to the owner.
    mutating func sent(upTo sequence: Int64) { delivered = sequence }

    /// The owner left (disconnect, invalidate, a failed attach): events now wait for a launch.
    mutating func release() {
        owner = nil
        delivered = nil
    }

    /// `connection` went away: released if it owned the session, no longer a watcher.
    /// Returns whether it was the owner.
    mutating func disconnect(_ connection: UInt64) -> Bool {
        watchers.remove(connection)
        guard owner == connection else { return false }
        release()
        return true
    }

    /// Who gets live progress: the owner and the watchers.
    var progressTargets: Set<UInt64> { owner.map { watchers.union([$0]) } ?? watchers }
}

/// A job that runs one at a time, and once more when asked while it runs (a pump, a launch
/// check): `begin()` before, `another()` after each round.
struct Rerun: Sendable {
    private enum State { case idle, running, runningAgain }
    private var state = State.idle

    var isIdle: Bool { state == .idle }

    /// True: run now. False: one is running, and it will run again.
    mutating func begin() -> Bool {
        switch state {
        case .idle:
            state = .running
            return true
        case .running, .runningAgain:
            state = .runningAgain
            return false
        }
    }

    /// Asks the running job to go round once more (it found more to do).
    mutating func again() {
        if state == .running { state = .runningAgain }
    }

    /// After a round: true to go round again, false when the job is done (and idle).
    mutating func another() -> Bool {
        switch state {
        case .runningAgain:
            state = .running
            return true
        case .running, .idle:
            state = .idle
            return false
        }
    }

    /// The job stopped early: idle again.
    mutating func end() { state = .idle }
}
