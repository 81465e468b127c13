import FerryEngine
public import Foundation
import Synchronization

/// A task's metrics in URLSession's spelling, for `urlSession(_:task:didFinishCollecting:)`.
/// Ferry's ``TaskMetrics`` underneath.
///
/// ```swift
/// func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
///     print(metrics.taskInterval.duration, metrics.redirectCount, metrics.transactionMetrics.last?.networkProtocolName ?? "")
/// }
/// ```
public final class URLSessionTaskMetrics: Sendable {
    /// One per request the task sent, made when first asked for (then the same objects): a
    /// delegate that does not look at them, which is most, does not pay for their requests and
    /// responses in URLSession's spelling (the platform skips the call when the delegate lacks
    /// the method; a Swift protocol cannot tell).
    public var transactionMetrics: [URLSessionTaskTransactionMetrics] {
        transactions.withLock { transactions in
            switch transactions {
            case .made(let made):
                return made
            case .recorded(let recorded):
                let made = recorded.map(URLSessionTaskTransactionMetrics.init)
                transactions = .made(made)
                return made
            }
        }
    }
    public let taskInterval: DateInterval
    public let redirectCount: Int

    private enum Transactions {
        case recorded([TransactionMetrics])
        case made([URLSessionTaskTransactionMetrics])
    }
    private let transactions: Mutex<Transactions>

    init(_ metrics: TaskMetrics) {
        transactions = Mutex(.recorded(metrics.transactions))
        taskInterval = metrics.taskInterval
        redirectCount = metrics.redirectCount
    }
}

/// One request of a task, timed. For plain `http` requests the connection is described (new
/// or reused, its name's lookup and its connect timed, its addresses; a host that is an
/// address has no lookup dates). Over TLS, HTTP/2, a proxy or with a body, the connection is
/// AsyncHTTPClient's and not described: those dates and addresses are nil and
/// `isReusedConnection` is false (docs/porting.md).
public final class URLSessionTaskTransactionMetrics: Sendable {
    public enum ResourceFetchType: Int, Sendable {
        case unknown = 0, networkLoad = 1, serverPush = 2, localCache = 3
    }

    public let request: URLRequest
    public let response: URLResponse?
    public let fetchStartDate: Date?
    /// When the host's name lookup began and ended; nil for a reused connection or an address.
    public let domainLookupStartDate: Date?
    public let domainLookupEndDate: Date?
    /// When the TCP connect began (after the lookup) and ended; nil for a reused connection.
    public let connectStartDate: Date?
    public var secureConnectionStartDate: Date? { nil }
    public var secureConnectionEndDate: Date? { nil }
    public let connectEndDate: Date?
    public let requestStartDate: Date?
    /// Ferry hands the request to its connection in one step: the same as ``requestStartDate``.
    public var requestEndDate: Date? { requestStartDate }
    public let responseStartDate: Date?
    public let responseEndDate: Date?
    /// `http/1.1` or `h2`.
    public let networkProtocolName: String?
    public let isProxyConnection: Bool
    /// The request went over a kept-alive connection an earlier request had opened.
    public let isReusedConnection: Bool
    public let localAddress: String?
    public let localPort: Int?
    public let remoteAddress: String?
    public let remotePort: Int?
    public var resourceFetchType: ResourceFetchType { .networkLoad }
    public let countOfRequestBodyBytesSent: Int64
    public let countOfResponseBodyBytesReceived: Int64

    init(_ transaction: TransactionMetrics) {
        request = URLRequest(transaction.request)
        response = transaction.response.map(HTTPURLResponse.init)
        fetchStartDate = transaction.fetchStartDate
        requestStartDate = transaction.requestStartDate
        responseStartDate = transaction.responseStartDate
        responseEndDate = transaction.responseEndDate
        networkProtocolName = transaction.networkProtocolName
        isProxyConnection = transaction.isProxyConnection
        countOfRequestBodyBytesSent = transaction.countOfRequestBodyBytesSent
        countOfResponseBodyBytesReceived = transaction.countOfResponseBodyBytesReceived
        let connection = transaction.connection
        domainLookupStartDate = connection?.domainLookupStartDate
        domainLookupEndDate = connection?.domainLookupEndDate
        connectStartDate = connection?.connectStartDate
        connectEndDate = connection?.connectEndDate
        isReusedConnection = connection?.isReused ?? false
        localAddress = connection?.localAddress
        localPort = connection?.localPort
        remoteAddress = connection?.remoteAddress
        remotePort = connection?.remotePort
    }
}
