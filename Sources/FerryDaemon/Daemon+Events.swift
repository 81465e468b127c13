import FerryProtocol
import FerryStore
import Foundation
import Logging

/// An app launch for a session's events, and when the next may happen.
///
/// A launch that fails, or whose app has not attached within `launchConnectTimeout`, is
/// retried after 10 s, 20 s, 40 s… up to an hour: never in a loop.
struct LaunchState: Sendable {
    var attempts = 0
    var lastLaunch: Date?
    var timer: Task<Void, Never>?

    static func delay(afterAttempts attempts: Int) -> TimeInterval {
        min(3600, 10 * pow(2, Double(max(0, attempts - 1))))
    }
}

extension Daemon {
    /// Events were stored for `session`: push them to its owner, or launch its app.
    func eventsStored(in session: String) async {
        if owners[session] != nil {
            await pumpEvents(session)
        } else {
            await launchIfNeeded(session)
        }
    }

    /// Sends the owner every stored event it has not been sent yet, in order, then
    /// `eventsFinished` if any went out. One pump per session at a time; a call while one
    /// runs makes it look again.
    func pumpEvents(_ session: String) async {
        guard !pumping.contains(session) else {
            pumpAgain.insert(session)
            return
        }
        pumping.insert(session)
        defer { pumping.remove(session) }
        var sentAny = false
        repeat {
            pumpAgain.remove(session)
            guard let owner = owners[session], let connection = connections[owner] else { return }
            let after = delivered[session] ?? 0
            let records: [EventRecord]
            do {
                records = try await store.undeliveredEvents(in: session, after: after, limit: 200)
            } catch {
                logger.error("cannot read events", metadata: ["session": "\(session)", "error": "\(error)"])
                return
            }
            // The owner may have changed while the store was read: start over for the new one.
            guard owners[session] == owner, (delivered[session] ?? 0) == after else {
                pumpAgain.insert(session)
                continue
            }
            for record in records {
                do {
                    guard connection.send(.event(try record.event())) else { return }
                } catch {
                    logger.error("a stored event does not decode; skipped", metadata: ["session": "\(session)", "sequence": "\(record.sequence)", "error": "\(error)"])
                }
                delivered[session] = record.sequence
                sentAny = true
            }
            if records.count == 200 { pumpAgain.insert(session) }
        } while pumpAgain.contains(session)
        if sentAny, let owner = owners[session], let connection = connections[owner] {
            connection.send(.eventsFinished(sessionIdentifier: session))
        }
    }

    /// Launches the session's containing app when it has undelivered events and nobody
    /// owns it, respecting the launch backoff. One check per session at a time (a call
    /// during one makes it look again), so two triggers cannot launch twice.
    func launchIfNeeded(_ session: String) async {
        guard !launchChecking.contains(session) else {
            launchCheckAgain.insert(session)
            return
        }
        launchChecking.insert(session)
        defer { launchChecking.remove(session) }
        repeat {
            launchCheckAgain.remove(session)
            await launchCheck(session)
        } while launchCheckAgain.contains(session)
    }

    private func launchCheck(_ session: String) async {
        guard owners[session] == nil, !isStopping else { return }
        let state = launches[session] ?? LaunchState()
        if let last = state.lastLaunch, clock.now < last.addingTimeInterval(LaunchState.delay(afterAttempts: state.attempts)) {
            return  // a launch is pending or backing off; its timer looks again
        }
        guard let record = try? await store.session(session),
            let count = try? await store.undeliveredEvents(in: session, limit: 1).count, count > 0,
            owners[session] == nil
        else { return }
        let app = record.appBundleIdentifier
        if app.hasPrefix("unregistered.") {
            logger.debug("events wait for an unregistered client; nothing to launch", metadata: ["session": "\(session)"])
            return
        }
        var next = launches[session] ?? LaunchState()
        next.attempts += 1
        next.lastLaunch = clock.now
        next.timer?.cancel()
        let attempt = next.attempts
        let wait = max(configuration.launchConnectTimeout, LaunchState.delay(afterAttempts: attempt))
        let deadline = clock.now.addingTimeInterval(wait)
        next.timer = Task { [clock] in
            try? await clock.sleep(until: deadline)
            guard !Task.isCancelled else { return }
            await self.launchIfNeeded(session)
        }
        launches[session] = next
        logger.notice("launching app for session events", metadata: ["session": "\(session)", "app": "\(app)", "attempt": "\(attempt)"])
        do {
            try await launcher.launch(appBundleIdentifier: app, sessionIdentifier: session)
        } catch {
            logger.warning("app launch failed", metadata: [
                "session": "\(session)", "app": "\(app)", "attempt": "\(attempt)", "error": "\(error)",
                "retryIn": "\(Int(wait)) s",
            ])
        }
    }
}
