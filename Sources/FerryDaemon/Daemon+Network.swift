import FerryCore
import FerryEngine
import FerryNetwork
import FerryProtocol
import Foundation

extension Daemon {
    /// Error codes of attempts that could not reach their host: their backoff is cut short
    /// when the network gets better.
    static let unreachableErrorCodes = [
        FerryError.Code.cannotConnectToHost, .notConnectedToInternet, .cannotFindHost, .networkConnectionLost, .timedOut, .secureConnectionFailed,
    ].map(\.description)

    /// The monitor's new reading. When more routes are usable than before, tasks backing off
    /// from an unreachable host are due at once, and the scheduler looks again now: waiting
    /// transfers start within a second of the network coming back, not at their next backoff.
    func networkChanged(_ conditions: NetworkConditions) async {
        let before = network
        network = conditions
        let links = conditions.path.map { $0.links.values.filter { $0.isUp && !$0.isLoopback }.map(\.name).sorted() } ?? []
        logger.info("network changed", metadata: [
            "links": "\(links.joined(separator: ","))", "defaultRoute": "\(conditions.path?.hasDefaultRoute ?? true)",
            "mains": "\(conditions.isOnMains)",
        ])
        networkRead.signal()
        if !routeCheckScheduled, !transfersThatLostTheirRoute().isEmpty {
            // Not at once: a link that drops for a moment (a Wi-Fi roam) keeps its TCP
            // connections, and an interrupted upload may have to start over.
            routeCheckScheduled = true
            let grace = NetworkConditions.routeLossGrace.timeInterval
            schedule(.routeCheck(deadline: clock.now.addingTimeInterval(grace)))
        }
        if conditions.isBetter(than: before) {
            do {
                let due = try await store.retryNow(backingOffFrom: Self.unreachableErrorCodes, now: clock.now)
                if due > 0 { logger.notice("network is back: retrying now", metadata: ["tasks": "\(due)"]) }
            } catch {
                logger.warning("cannot bring retries forward", metadata: ["error": "\(error)"])
            }
        }
        wakeup.signal()
    }

    /// Stops the running transfers whose link went down (or no longer routes to their host)
    /// and stayed so for ``NetworkConditions/routeLossGrace``, and puts them back to wait,
    /// their resume points kept (a download's; an upload that cannot resume starts over): the kernel does not close
    /// a TCP connection when its link goes, so without this a transfer would sit until its
    /// request time-out (60 s by default) and then count as a failed attempt. The scheduler's
    /// next pass holds them (`noNetwork`, told once to an owner that asked) or starts them
    /// over another link. The attempt does not count (waiting for the network uses none).
    func interruptTransfersThatLostTheirRoute() async {
        routeCheckScheduled = false
        let lost = transfersThatLostTheirRoute()
        guard !lost.isEmpty else { return }
        logger.notice("route lost: interrupting transfers", metadata: [
            "tasks": "\(lost.count)", "links": "\(Set(lost.values.compactMap(\.link)).sorted().joined(separator: ","))",
        ])
        // Only those this stopped go back to wait: one a suspend, cancel or shutdown stopped
        // meanwhile is that request's to settle.
        let stopped = await withTaskGroup(of: TaskKey?.self) { group in
            for key in lost.keys { group.addTask { await self.interrupt(key, because: .routeLost) ? key : nil } }
            var stopped: [TaskKey] = []
            for await key in group { if let key { stopped.append(key) } }
            return stopped
        }
        for key in stopped {
            do {
                _ = try await store.updateTask(session: key.session, task: key.task, now: clock.now) { record in
                    guard record.state == .running else { return }
                    record.state = .waiting
                    // The network took it away: that uses no attempt, as waiting for it does not.
                    record.attemptCount = max(0, record.attemptCount - 1)
                }
            } catch {
                logger.warning("cannot put an interrupted task back to wait", metadata: [
                    "session": "\(key.session)", "task": "\(key.task)", "error": "\(error)",
                ])
            }
        }
        wakeup.signal()  // the next pass holds them (noNetwork) or starts them over another link
    }

    /// The running transfers whose link the last reading found down, or no longer routing to
    /// their host.
    private func transfersThatLostTheirRoute() -> [TaskKey: RunningTask] {
        running.filter { _, task in
            task.stop == nil && !task.completing && task.link.map { network.hasLost($0, toward: task.host) } == true
        }
    }

    /// Waits (at most `limit`, in real time) for the monitor's first reading.
    nonisolated func firstNetworkReading(within limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.networkRead.wait() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Tells the owner of a task held by the network that it waits, once per task, when its
    /// session asked (`waitsForConnectivity`): the app's `taskIsWaitingForConnectivity`.
    func announceWaiting(_ key: TaskKey, reason: WaitingReason, access: NetworkAccess) {
        guard access.waitsForConnectivity, !announcedWaiting.contains(key), let owner = owner(of: key.session),
            let connection = connections[owner]
        else { return }
        announcedWaiting.insert(key)
        connection.send(.waitingForConnectivity(TaskWaiting(sessionIdentifier: key.session, taskIdentifier: key.task, reason: reason)))
    }
}

extension NetworkConditions {
    /// Whether this reading reaches something the other did not: a usable route it lacked, or
    /// mains power back. Unknown (nil) reaches everything.
    func isBetter(than other: NetworkConditions) -> Bool {
        guard let path else { return other.path != nil }
        guard let old = other.path else { return false }
        return !path.usableRoutes.isSubset(of: old.usableRoutes) || (isOnMains && !other.isOnMains)
    }
}
