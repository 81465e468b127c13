public import Foundation

/// One request of a transfer and its response, timed: what URLSession's
/// `URLSessionTaskTransactionMetrics` reports. The engine hands one to its observer
/// (``TransferObserver/transferDidFinish(transaction:)``) when each request ends: a redirect,
/// a challenge answered, a retry, the final response, or a failure.
///
/// ```swift
/// func transferDidFinish(transaction: TransactionMetrics) {
///     let wait = transaction.responseStartDate?.timeIntervalSince(transaction.requestStartDate ?? transaction.fetchStartDate)
///     print(transaction.request.url, transaction.response?.statusCode ?? 0, wait ?? -1)
/// }
/// ```
///
/// The connection is described for plain `http` requests, which go over the engine's own
/// connections (``connection``); AsyncHTTPClient's pool (TLS, HTTP/2, proxies, bodies) tells
/// nothing of its connections, so there it is nil.
public struct TransactionMetrics: Sendable {
    public var request: Request
    /// nil when the request failed before a response head.
    public var response: Response?
    /// When the engine began this request (before waiting for a connection slot).
    public var fetchStartDate: Date
    /// When the request was handed to the connection.
    public var requestStartDate: Date?
    /// When the response head arrived.
    public var responseStartDate: Date?
    /// When the last byte of the response body was taken (or the request failed).
    public var responseEndDate: Date?
    /// The protocol as ALPN names it: `http/1.1`, `h2`.
    public var networkProtocolName: String?
    /// Whether the request went through a proxy.
    public var isProxyConnection: Bool
    public var countOfRequestBodyBytesSent: Int64
    public var countOfResponseBodyBytesReceived: Int64
    /// The connection the request went over, when the engine knows it (plain `http`).
    public var connection: ConnectionUse?

    init(request: Request, isProxyConnection: Bool) {
        self.request = request
        self.fetchStartDate = Date()
        self.isProxyConnection = isProxyConnection
        self.countOfRequestBodyBytesSent = 0
        self.countOfResponseBodyBytesReceived = 0
    }

    /// The head arrived: the response, its time and protocol.
    mutating func responseStarted(_ response: Response) {
        self.response = response
        responseStartDate = Date()
        networkProtocolName = response.httpVersion.hasPrefix("HTTP/2") ? "h2" : response.httpVersion.lowercased()
    }
}

/// The connection one request went over: new or kept alive, how it was opened, and its ends.
public struct ConnectionUse: Sendable, Hashable {
    /// It had carried an earlier request (kept alive) and was taken from the pool.
    public var isReused: Bool
    /// How it was opened; nil for a reused connection, whose dates URLSession reports as nil.
    public var times: ConnectionTimes?
    public var localAddress: String?
    public var localPort: Int?
    public var remoteAddress: String?
    public var remotePort: Int?

    /// When the host's name lookup began and ended: nil when the host is an address.
    public var domainLookupStartDate: Date? { times?.domainLookupStart }
    public var domainLookupEndDate: Date? { times?.domainLookupEnd }
    /// When the TCP connect began (after the lookup) and ended.
    public var connectStartDate: Date? { times?.connectStart }
    public var connectEndDate: Date? { times?.connectEnd }
}

/// The steps of opening a connection, in order: the lookup of the host's name (none for an
/// address), then the connect (Happy Eyeballs' attempts included).
public struct ConnectionTimes: Sendable, Hashable {
    public var domainLookupStart: Date?
    public var domainLookupEnd: Date?
    public var connectStart: Date
    public var connectEnd: Date
}
