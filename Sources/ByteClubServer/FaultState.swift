import Hummingbird
import HTTPTypes
import Synchronization

/// The running state of ``FaultInjection``: how many failures are still to answer and how many
/// connections have been seen (the drop applies to the first `dropConnections`).
final class FaultState: Sendable {
    let faults: FaultInjection?
    private let failuresLeft: Atomic<Int>
    private let connections = Atomic<Int>(0)

    init(_ faults: FaultInjection?) {
        self.faults = faults
        failuresLeft = Atomic(faults?.failNextRequests ?? 0)
    }

    /// Whether this request is one of the next K to fail.
    func takeFailure() -> Bool {
        while true {
            let left = failuresLeft.load(ordering: .relaxed)
            if left <= 0 { return false }
            if failuresLeft.compareExchange(expected: left, desired: left - 1, ordering: .relaxed).exchanged { return true }
        }
    }

    /// Numbers connections from 0 as they arrive.
    func nextConnection() -> Int {
        connections.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Whether the connection numbered `index` gets dropped after `dropAfterBytes`.
    func dropsConnection(_ index: Int) -> Bool {
        guard let faults, faults.dropAfterBytes != nil else { return false }
        guard let limit = faults.dropConnections else { return true }
        return index < limit
    }
}

/// Answers the next K requests with 503/429 and `Retry-After` when fault injection says so.
struct FaultMiddleware: RouterMiddleware {
    typealias Context = ByteClubContext
    let state: FaultState

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let faults = state.faults, state.takeFailure() {
            let status = HTTPResponse.Status(code: faults.failStatus)
            context.logger.info("fault injection: answering \(faults.failStatus)")
            throw APIError(status, "Injected fault: try again later", headers: [.retryAfter: String(faults.retryAfterSeconds)])
        }
        return try await next(request, context)
    }
}
