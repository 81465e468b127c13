import FerryCore
package import FerryEngine
package import FerryNetwork
package import FerryProtocol
import Foundation

extension Configuration {
    /// What an in-process task asks of the network before it connects; nil when it asks
    /// nothing (every link allowed, no waiting: the default, which costs nothing).
    var connectivityRequirement: ConnectivityRequirement? { ConnectivityRequirement(access: networkAccess) }
}

extension ConnectivityRequirement {
    /// Holds `transfer` until the network lets it start (see ``ConnectivityRequirement/admit(host:within:gate:waiting:)``),
    /// calling `waiting` once if it must wait, and returns it with what is left of its resource
    /// time-out: the wait counts toward it, as on Apple's platforms, and the request time-out
    /// starts only once it connects. Throws a ``FerryError`` (`notConnectedToInternet`, `timedOut`).
    package func admit(_ transfer: Transfer, waiting: @Sendable (WaitingReason) async -> Void) async throws -> Transfer {
        guard let host = transfer.request.url.host, !host.isEmpty else { return transfer }  // the engine says what is wrong
        let start = ContinuousClock.now
        let limit = transfer.resourceTimeout.map { Duration.milliseconds(Int64($0 * 1000)) }
        do {
            try await admit(host: host, within: limit, waiting: waiting)
        } catch let failure as ConnectivityFailure {
            throw FerryError(failure, url: transfer.request.url)
        }
        var admitted = transfer
        if let timeout = transfer.resourceTimeout {
            admitted.resourceTimeout = max(0.001, timeout - (ContinuousClock.now - start).timeInterval)
        }
        return admitted
    }

    /// Runs `body`, the admitted `transfer`, and stops it with `stop` when its link goes (see
    /// ``ConnectivityRequirement/following(host:gate:stop:_:)``): the error is then
    /// `networkConnectionLost`, as on Apple's platforms when a connection's interface goes.
    package func following<T>(_ transfer: Transfer, stop: @escaping @Sendable () -> Bool, _ body: () async throws -> T) async throws -> T {
        guard let host = transfer.request.url.host, !host.isEmpty else { return try await body() }
        do {
            return try await following(host: host, stop: stop, body)
        } catch let failure as ConnectivityFailure {
            throw FerryError(failure, url: transfer.request.url)
        }
    }

    /// A session task's wait: its `waitingReason` while it lasts, and its delegate told once.
    func admit(_ transfer: Transfer, task: SessionTask, observer: TaskObserver) async throws -> Transfer {
        let admitted = try await admit(transfer) { reason in await observer.transferIsWaitingForConnectivity(reason) }
        task.noteWaiting(nil)
        return admitted
    }
}

extension FerryError {
    /// The error a task gets when the network did not let it start.
    init(_ failure: ConnectivityFailure, url: URL) {
        switch failure {
        case .unavailable(let reason):
            self.init(.notConnectedToInternet, reason.message + "; set waitsForConnectivity to wait for it", url: url)
            networkUnavailableReason = switch reason.kind {
            case .cellularNetwork: .cellular
            case .expensiveNetwork: .expensive
            case .constrainedNetwork: .constrained
            default: nil
            }
        case .timedOut(let reason):
            self.init(.timedOut, "waited for connectivity longer than the resource time-out: \(reason.message)", url: url)
        case .routeLost(let link):
            self.init(.networkConnectionLost, "the network link \(link) went down (or no longer routes to the host) during the transfer", url: url)
        }
    }
}
