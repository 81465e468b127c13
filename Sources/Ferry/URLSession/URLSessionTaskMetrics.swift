import FerryEngine
public import Foundation

/// A task's metrics in URLSession's spelling, for `urlSession(_:task:didFinishCollecting:)`.
/// Ferry's ``TaskMetrics`` underneath.
///
/// ```swift
/// func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
///     print(metrics.taskInterval.duration, metrics.redirectCount, metrics.transactionMetrics.last?.networkProtocolName ?? "")
/// }
/// ```
public final class URLSessionTaskMetrics: Sendable {
    public let transactionMetrics: [URLSessionTaskTransactionMetrics]
    public let taskInterval: DateInterval
    public let redirectCount: Int

    init(_ metrics: TaskMetrics) {
        transactionMetrics = metrics.transactions.map(URLSessionTaskTransactionMetrics.init)
        taskInterval = metrics.taskInterval
        redirectCount = metrics.redirectCount
    }
}

/// One request of a task, timed. The connection's own steps (name lookup, connect, TLS)
/// happen inside Ferry's connection pool and are not timed: their dates are nil, and so are
/// the addresses and TLS details (docs/porting.md).
public final class URLSessionTaskTransactionMetrics: Sendable {
    public enum ResourceFetchType: Int, Sendable {
        case unknown = 0, networkLoad = 1, serverPush = 2, localCache = 3
    }

    public let request: URLRequest
    public let response: URLResponse?
    public let fetchStartDate: Date?
    public var domainLookupStartDate: Date? { nil }
    public var domainLookupEndDate: Date? { nil }
    public var connectStartDate: Date? { nil }
    public var secureConnectionStartDate: Date? { nil }
    public var secureConnectionEndDate: Date? { nil }
    public var connectEndDate: Date? { nil }
    public let requestStartDate: Date?
    /// Ferry hands the request to its connection in one step: the same as ``requestStartDate``.
    public var requestEndDate: Date? { requestStartDate }
    public let responseStartDate: Date?
    public let responseEndDate: Date?
    /// `http/1.1` or `h2`.
    public let networkProtocolName: String?
    public let isProxyConnection: Bool
    /// Not known: false.
    public var isReusedConnection: Bool { false }
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
    }
}
