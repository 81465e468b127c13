import FerryCore
import FerryApps
import FerryProtocol
import FerryStore
import Foundation
import Logging

/// An app launch for a session's events, and when the next may happen: FerryApps'
/// `LaunchBackoff` with a 10 s base and a one-hour cap, plus the timer that looks again.
///
/// A launch that fails, or whose app has not acknowledged the events within
/// `launchConnectTimeout`, is retried after 10 s, 20 s, 40 s… (at least the connect
/// time-out), at most an hour apart: never in a loop. The backoff starts afresh once every
/// event is acknowledged, not at attach, so an app that attaches and dies is not launched
/// in a loop either.
struct LaunchState: Sendable {
    var backoff = LaunchBackoff(base: .seconds(10), cap: .seconds(3600))
    /// The timer job that looks again (`DaemonJob.launchTimer`).
    var timer: StopControl?
    /// A running copy of the app was told already: the next attempt starts the app.
    var toldRunningApp = false

    /// A launch was made and the next one is not allowed yet: its timer looks again.
    func isBackingOff(at now: Date) -> Bool {
        guard let allowed = backoff.nextAllowedLaunch() else { return false }
        return now < allowed
    }

    static func delay(afterAttempts attempts: Int) -> TimeInterval {
        var backoff = LaunchBackoff(base: .seconds(10), cap: .seconds(3600))
        for _ in 0..<attempts { backoff.recordLaunch(at: Date(timeIntervalSince1970: 0)) }
        return backoff.nextAllowedLaunch()?.timeIntervalSince1970 ?? 0
    }
}

extension Daemon {
    /// Events were stored for `session`: push them to its owner, or launch its app.
    func eventsStored(in session: String) async {
        if owner(of: session) != nil {
            await pumpEvents(session)
        } else {
            await launchIfNeeded(session)
        }
    }

    /// Sends the owner every stored event it has not been sent yet, in order, then
    /// `eventsFinished` if any went out (held while a challenge of the session waits:
    /// ``EventsFinishedHold``); then the session goes live: later events go to the
    /// owner as they commit, without the pump (`EventOutbox`). One pump per session at a
    /// time; a call while one runs makes it look again (`SessionPresence.pump`).
    func pumpEvents(_ session: String) async {
        guard update(session, { $0.pump.begin() }) else { return }
        var sentAny = false
        var done = false
        defer { if !done { update(session) { $0.pump.end() } } }
        repeat {
            // `delivered` is set once the owner's `attached` reply is out: no event overtakes it.
            guard let owner = owner(of: session), let connection = connections[owner], var after = sessions[session]?.delivered else { return }
            let taken = outbox.take(session, after: after)
            // Events sent live before the session came back to this pump move its cursor.
            if let sent = taken.sent, sent > after {
                update(session) { $0.sent(upTo: sent) }
                after = sent
            }
            let batch: [OutgoingEvent]
            switch taken {
            case .live:
                continue  // its events go as they commit
            case .events(let held, _):
                batch = held
            case .readStore:
                outbox.cover(session)  // before the read: what commits from now on is kept
                let records: [EventRecord]
                do {
                    records = try await store.undeliveredEvents(in: session, after: after, limit: 200)
                } catch {
                    outbox.drop(session)
                    logger.error("cannot read events", metadata: ["session": "\(session)", "error": "\(error)"])
                    return
                }
                // The owner may have changed while the store was read: start over for the new one.
                guard self.owner(of: session) == owner, sessions[session]?.delivered == after else {
                    update(session) { $0.pump.again() }
                    continue
                }
                if records.count == 200 {
                    outbox.drop(session)  // more are stored than were read: memory would skip them
                    update(session) { $0.pump.again() }
                } else {
                    outbox.covered(session, through: records.last?.sequence ?? after)
                }
                batch = records.map { ($0, nil) }
            }
            guard await send(batch, of: session, to: connection) else {
                outbox.drop(session)  // taken from memory and not sent: the store has them
                return
            }
            // The owner may have left while the socket drained: its presence is not revived.
            guard self.owner(of: session) == owner, sessions[session]?.delivered == after else {
                update(session) { $0.pump.again() }
                continue
            }
            if let last = batch.last?.record.sequence {
                update(session) { $0.sent(upTo: last) }
                sentAny = true
            }
            // Caught up: later events go as they commit. When this fails, events committed
            // meanwhile (they woke this pump again) or memory is not complete (the store is read).
            _ = outbox.goLive(session, to: connection, sent: batch.last?.record.sequence ?? after)
        } while update(session, { $0.pump.another() })
        done = true
        // Not while a challenge of the session waits for the app: it is owed until the answer.
        if sentAny, finishHold.mayFinish(session) { sendEventsFinished(session) }
    }

    /// Sends `batch` in slices of about `eventSliceBytes`, each once the connection has less
    /// than `maximumOutboundBytes / 2` waiting, so a client that reads keeps up with any
    /// backlog (a relaunched app's thousands of events, bodies of megabytes) and only one that
    /// does not is cut off; for a paced session, each slice also waits for room in the
    /// owner's window (``EventPacing``). False when the connection took no more (it is closing).
    private func send(_ batch: [OutgoingEvent], of session: String, to connection: ClientConnection) async -> Bool {
        var start = 0
        while start < batch.count {
            guard await connection.roomForMessages(of: session) else { return false }
            var end = start
            var bytes = 0
            while end < batch.count, end == start || bytes + batch[end].record.payload.utf8.count <= Self.eventSliceBytes {
                bytes += batch[end].record.payload.utf8.count
                end += 1
            }
            let granted = connection.reserveMessages(batch[start..<end].lazy.map { $0.record.payload.utf8.count }, of: session)
            guard granted > 0 else { continue }  // a progress report took the room: wait again
            end = start + granted
            await connection.drained(to: connection.maximumOutboundBytes / 2)
            let events = EventRecord.payloads(Array(batch[start..<end]), logger: logger)
            // A stored event of a kind this build does not know is skipped: the owner will not count it.
            if events.count < granted { connection.unreserveMessages(granted - events.count, of: session) }
            guard connection.send(encoded: events) == events.count else { return false }
            start = end
        }
        return true
    }

    /// The payload bytes of events sent in one write by the pump.
    static let eventSliceBytes = 1 << 20

    /// Launches the session's containing app when it has undelivered events and nobody
    /// owns it, respecting the launch backoff. One check per session at a time (a call
    /// during one makes it look again), so two triggers cannot launch twice.
    func launchIfNeeded(_ session: String) async {
        guard update(session, { $0.launchCheck.begin() }) else { return }
        repeat {
            await launchCheck(session)
        } while update(session, { $0.launchCheck.another() })
    }

    private func launchCheck(_ session: String) async {
        // A launch pending or backing off has its timer, which looks again.
        guard owner(of: session) == nil, !isStopping, sessions[session]?.launch?.isBackingOff(at: clock.now) != true,
            let record = try? await store.session(session),
            let count = try? await store.undeliveredEvents(in: session, limit: 1).count, count > 0,
            owner(of: session) == nil
        else { return }
        if await settleUnclaimedEvents(of: record) { return }
        let app = record.appBundleIdentifier
        switch Self.launchRefusal(of: record) {
        case .unregisteredClient?:
            logger.debug("events wait for an unregistered client; nothing to launch", metadata: ["session": "\(session)"])
        case .noLaunchEvents?:
            logger.info("events wait for the app to attach: its session does not send launch events", metadata: ["session": "\(session)", "app": "\(app)"])
        case nil:
            await launch(app, for: session, because: "session events")
        }
    }

    /// Why a session's app is never started for it, whatever waits: nil when it may be.
    enum LaunchRefusal {
        /// The session is a client's without an app (the CLI's, a test's).
        case unregisteredClient
        /// The session was made with `sessionSendsLaunchEvents` false.
        case noLaunchEvents
    }

    static func launchRefusal(of record: SessionRecord) -> LaunchRefusal? {
        if isUnregistered(record.appBundleIdentifier) { return .unregisteredClient }
        if !record.sendsLaunchEvents { return .noLaunchEvents }
        return nil
    }

    /// Starts the app of `session`, whose task waits for an answer to an authentication
    /// challenge and which nobody owns, as a launch for events would (the same rules, backoff
    /// and timer). True when a launch was made or is under way: an owner may attach soon.
    func launchToAnswerChallenge(_ session: String) async -> Bool {
        guard owner(of: session) == nil, !isStopping, let record = try? await store.session(session),
            Self.launchRefusal(of: record) == nil
        else { return false }
        let state = sessions[session]?.launch ?? LaunchState()
        if state.isBackingOff(at: clock.now) {
            // Backing off: worth waiting only for a launch made moments ago (its app may still
            // attach), not for an app that did not come (the default answers at once instead).
            guard let last = state.backoff.lastLaunch else { return false }
            return clock.now.timeIntervalSince(last) < configuration.launchConnectTimeout && state.backoff.launchesWithoutConnecting <= 1
        }
        await launch(record.appBundleIdentifier, for: session, because: "an authentication challenge")
        return true
    }

    /// Starts `app` for `session` (`reason` for the log), or tells a running copy that asked
    /// to be told, and sets the timer after which it counts as not having come.
    private func launch(_ app: String, for session: String, because reason: String) async {
        // A copy of the app that runs and asked to be told is told instead of starting another
        // (with the same backoff and timer as a launch: it has that long to attach).
        var next = sessions[session]?.launch ?? LaunchState()
        let running = next.toldRunningApp ? nil : runningCopy(of: app)
        next.toldRunningApp = running != nil
        next.backoff.recordLaunch(at: clock.now)
        next.timer?.stop()
        let attempt = next.backoff.launchesWithoutConnecting
        let wait = max(configuration.launchConnectTimeout, next.backoff.nextAllowedLaunch()?.timeIntervalSince(clock.now) ?? 0)
        let deadline = clock.now.addingTimeInterval(wait)
        let timer = StopControl()
        next.timer = timer
        schedule(.launchTimer(session: session, deadline: deadline, timer))
        update(session) { $0.launch = next }
        if let running {
            logger.notice("telling the running app of its session's events", metadata: [
                "session": "\(session)", "app": "\(app)", "pid": "\(running.peer.pid)", "attempt": "\(attempt)",
            ])
            running.send(.eventsWaiting(sessionIdentifier: session))
            return
        }
        logger.notice("launching app for \(reason)", metadata: ["session": "\(session)", "app": "\(app)", "attempt": "\(attempt)"])
        do {
            try await launcher.launch(appBundleIdentifier: app, sessionIdentifier: session)
        } catch {
            logger.warning("app launch failed", metadata: [
                "session": "\(session)", "app": "\(app)", "attempt": "\(attempt)", "error": "\(error)",
                "retryIn": "\(Int(wait)) s",
            ])
        }
    }

    /// A connection of the app itself (not one of its extensions) whose hello asked to be told
    /// of other sessions' events.
    private func runningCopy(of app: String) -> ClientConnection? {
        connections.values.first { connection in
            connection.hello?.handlesEventsForOtherSessions == true && Self.isTheApp(apps.identify(pid: connection.peer.pid), app)
        }
    }

    static func isTheApp(_ peer: PeerApp, _ app: String) -> Bool {
        !peer.isExtension && peer.bundleIdentifier == app
    }
}
