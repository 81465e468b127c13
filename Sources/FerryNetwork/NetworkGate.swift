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

/// Why an in-process transfer did not start.
package enum ConnectivityFailure: Error, Sendable {
    /// The network does not offer what the session allows, and the session does not wait.
    case unavailable(WaitingReason)
    /// The session waited for it longer than the task's resource time-out.
    case timedOut(WaitingReason)
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
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
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
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.generation > generation || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    private func publish(_ conditions: NetworkConditions) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.conditions = conditions
            state.generation += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func makeWatch() -> NetworkWatch {
        NetworkWatch(
            monitoring: .automatic, classes: NetworkInterfaceClasses(environment: environment),
            networkManagerBus: NetworkWatch.networkManagerBus(environment), powerSupply: PowerSupply.systemDirectory,
            logger: Logger(label: "ferry.network"), threadName: "ferry network monitor"
        ) { [weak self] conditions in self?.publish(conditions) }
    }
}
