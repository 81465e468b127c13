package import FerryCore
package import FerryProtocol
import Foundation
import Logging
import Synchronization

/// What an in-process transfer asks of the network before it connects: a session's
/// `allowsCellularAccess`, `allowsExpensiveNetworkAccess`, `allowsConstrainedNetworkAccess`
/// and `waitsForConnectivity`, judged against the process's ``NetworkGate``. As on Apple's
/// platforms, `isDiscretionary` is for background sessions only (ferryd judges those).
///
/// ```swift
/// if let requirement = ConnectivityRequirement(access: NetworkAccess(waitsForConnectivity: true)) {
///     try await requirement.admit(host: "example.com", within: .seconds(60)) { reason in print(reason.message) }
/// }
/// ```
package struct ConnectivityRequirement: Sendable {
    /// The session's settings, its `waitsForConnectivity` among them.
    package let access: NetworkAccess

    /// Nil when there is nothing to ask: every link allowed and no waiting (a task then
    /// connects at once, and no monitor runs for it). `isDiscretionary` is not looked at.
    package init?(access: NetworkAccess) {
        var access = access
        access.isDiscretionary = false
        guard access != .unrestricted else { return nil }
        self.access = access
    }

    /// Returns once the network lets a transfer to `host` start. When it does not: throws
    /// ``ConnectivityFailure/unavailable(_:)`` at once, or when the session waits for
    /// connectivity calls `waiting` once
    /// and waits for a reading that lets it start, for at most `limit` (then
    /// ``ConnectivityFailure/timedOut(_:)``) or until the task is cancelled (`CancellationError`).
    package func admit(
        host: String, within limit: Duration?, gate: NetworkGate = .shared, waiting: @Sendable (WaitingReason) async -> Void
    ) async throws {
        let deadline = limit.map { ContinuousClock.now + $0 }
        var told = false
        while true {
            try Task.checkCancellation()
            let (reason, generation) = await gate.hold(host: host, access: access)
            guard let reason else { return }
            guard access.waitsForConnectivity else { throw ConnectivityFailure.unavailable(reason) }
            if !told {
                told = true
                await waiting(reason)
            }
            if let deadline, ContinuousClock.now >= deadline { throw ConnectivityFailure.timedOut(reason) }
            await gate.nextReading(after: generation, until: deadline)
        }
    }
}

extension ConnectivityRequirement {
    /// Runs `body` (a transfer to `host` that was admitted) and follows its route meanwhile:
    /// when a reading finds the link it left by down, or no longer routing to `host`, `stop`
    /// is called (it must make `body` end, as cancelling its task does, and say whether it was
    /// the first to stop it) and, when it was, this throws ``ConnectivityFailure/routeLost(_:)``
    /// whatever `body` threw: a cancel or time-out that came first keeps its own error. The
    /// kernel keeps such a TCP connection open, so without this the transfer would sit until its
    /// request time-out.
    package func following<T>(
        host: String, gate: NetworkGate = .shared, stop: @escaping @Sendable () -> Bool, _ body: () async throws -> T
    ) async throws -> T {
        let lost = Mutex<String?>(nil)
        let follower = gate.follow(host: host) { link in
            lost.withLock { $0 = link }
            if !stop() { lost.withLock { $0 = nil } }
        }
        defer { follower.map(gate.unfollow) }
        do {
            return try await body()
        } catch {
            if let link = lost.withLock({ $0 }) { throw ConnectivityFailure.routeLost(link) }
            throw error
        }
    }
}

/// Why an in-process transfer did not start, or stopped.
package enum ConnectivityFailure: Error, Sendable {
    /// The network does not offer what the session allows, and the session does not wait.
    case unavailable(WaitingReason)
    /// The session waited for it longer than the task's resource time-out.
    case timedOut(WaitingReason)
    /// The link the running transfer's connection left by went down (named), or no longer
    /// routes to its host.
    case routeLost(String)
}

/// The network as an app's in-process sessions see it: one ``NetworkWatch`` for the process
/// (a thread and a netlink socket), started by the first transfer that asks (a session that
/// restricts links or waits for connectivity), kept for the process's life. Links are classed
/// as ferryd classes them (the same `FERRYD_*_INTERFACES` patterns, NetworkManager's metered
/// devices), so a task is held for the same reasons in-process and in the background.
package final class NetworkGate: Sendable {
    package static let shared = NetworkGate()

    private struct State {
        var watch: NetworkWatch?
        var conditions: NetworkConditions?
        /// Readings so far: a waiter that saw reading n waits for n + 1.
        var generation = 0
        /// Opens with the next reading (then a new one waits for the one after).
        var nextReading = Latch()
        /// Running transfers whose route each reading checks (``follow(host:lost:)``).
        var followers: [Int: Follower] = [:]
        var nextFollower = 0
        /// A reading found a follower's link gone: a second look is due after the grace.
        var secondLookDue = false
    }
    private struct Follower {
        let host: String
        let link: String
        let lost: @Sendable (String) -> Void
    }
    private let state = Mutex(State())
    private let environment: [String: String]
    /// How long a first transfer waits for the watch's first reading (it waits at most 1 s
    /// for NetworkManager); without one, every host counts as reachable.
    static let firstReadingWait = Duration.seconds(3)

    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Why `access` keeps a transfer to `host` from starting now (nil: it may start), with the
    /// reading's number for ``nextReading(after:until:)``.
    func hold(host: String, access: NetworkAccess) async -> (WaitingReason?, Int) {
        let firstReadingDue = state.withLock { state -> Bool in
            if state.watch == nil { state.watch = makeWatch() }
            return state.generation == 0
        }
        if firstReadingDue {
            await nextReading(after: 0, until: ContinuousClock.now + Self.firstReadingWait)
        }
        return state.withLock { ($0.conditions?.hold(host: host, access: access), $0.generation) }
    }

    /// Returns once there is a reading newer than `generation`, at `deadline`, or when the
    /// task is cancelled.
    func nextReading(after generation: Int, until deadline: ContinuousClock.Instant?) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.reading(after: generation) }
            if let deadline { group.addTask { try? await Task.sleep(until: deadline) } }
            await group.next()
            group.cancelAll()
        }
    }

    private func reading(after generation: Int) async {
        let next = state.withLock { $0.generation > generation ? nil : $0.nextReading }
        await next?.wait()
    }

    /// Follows a running transfer to `host`: `lost` is called once, with the link's name, when
    /// the link it leaves by now is found down or no longer routing to `host` by a reading and
    /// still so ``NetworkConditions/routeLossGrace`` later. Nil when there is nothing to follow
    /// (no reading yet, loopback, no route).
    func follow(host: String, lost: @escaping @Sendable (String) -> Void) -> Int? {
        state.withLock { state in
            guard let link = state.conditions?.link(toward: host) else { return nil }
            defer { state.nextFollower += 1 }
            state.followers[state.nextFollower] = Follower(host: host, link: link, lost: lost)
            return state.nextFollower
        }
    }

    func unfollow(_ follower: Int) {
        _ = state.withLock { $0.followers.removeValue(forKey: follower) }
    }

    private func publish(_ conditions: NetworkConditions) {
        let (arrived, lookAgain) = state.withLock { state -> (Latch, Bool) in
            state.conditions = conditions
            state.generation += 1
            defer { state.nextReading = Latch() }
            let lookAgain = !state.secondLookDue && state.followers.values.contains { conditions.hasLost($0.link, toward: $0.host) }
            if lookAgain { state.secondLookDue = true }
            return (state.nextReading, lookAgain)
        }
        arrived.open()
        if lookAgain {
            // One short-lived timer for all of them, only when a link went.
            Task {
                try? await Task.sleep(for: NetworkConditions.routeLossGrace)
                self.stopFollowersThatLostTheirRoute()
            }
        }
    }

    /// Tells the followers whose link the latest reading still finds gone.
    private func stopFollowersThatLostTheirRoute() {
        let lost = state.withLock { state -> [Follower] in
            state.secondLookDue = false
            guard let conditions = state.conditions else { return [] }
            let lost = state.followers.filter { conditions.hasLost($0.value.link, toward: $0.value.host) }
            for id in lost.keys { state.followers[id] = nil }
            return Array(lost.values)
        }
        for follower in lost { follower.lost(follower.link) }
    }

    private func makeWatch() -> NetworkWatch {
        NetworkWatch(
            monitoring: .automatic, classes: NetworkInterfaceClasses(environment: environment),
            networkManagerBus: NetworkWatch.networkManagerBus(environment), powerSupply: PowerSupply.systemDirectory,
            logger: Logger(label: "ferry.network"), threadName: "ferry network monitor"
        ) { [weak self] conditions in self?.publish(conditions) }
    }
}
