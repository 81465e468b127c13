// One request as a test server saw it on the wire.

/// A request a test server received, for assertions after the fact.
///
/// ```swift
/// let resumed = server.requests.last { $0.path == "/bytes/1000" }!
/// #expect(resumed.header("range") == "bytes=500-")
/// #expect(resumed.header("if-range") != nil)
/// ```
public struct RecordedRequest: Sendable {
    /// The method as sent, e.g. `GET`.
    public var method: String
    /// The request target as sent: path and query, e.g. `/bytes/10?seed=1`.
    public var uri: String
    /// The header fields in wire order, names as sent.
    public var headers: [(String, String)]
    /// Body bytes received (so far, if the connection was cut).
    public var bodyLength: Int
    /// Lower-case hex SHA-256 of the body bytes received.
    public var bodySHA256: String
    /// 1-based number of the TCP connection that carried the request, in accept order.
    public var connection: Int
    /// When the request head arrived (monotonic).
    public var receivedAt: ContinuousClock.Instant
    /// Server-internal identity, to update the record when the body has been read.
    var id = 0

    /// Creates a record; servers fill these in, tests rarely need to.
    public init(
        method: String, uri: String, headers: [(String, String)], bodyLength: Int = 0,
        bodySHA256: String = RecordedRequest.emptySHA256, connection: Int,
        receivedAt: ContinuousClock.Instant = .now
    ) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.bodyLength = bodyLength
        self.bodySHA256 = bodySHA256
        self.connection = connection
        self.receivedAt = receivedAt
    }

    /// SHA-256 of no bytes.
    public static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The path part of `uri` (before `?`).
    public var path: String {
        uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
    }

    /// The first value of a header field, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.0.lowercased() == lower }?.1
    }
}

/// A response head a test server sent (informational ones included).
///
/// ```swift
/// let informational = server.responses.filter { $0.status == 104 }
/// #expect(informational.first?.header("upload-draft-interop-version") == "6")
/// ```
public struct RecordedResponse: Sendable {
    /// The status code, e.g. `104` or `201`.
    public var status: Int
    /// The header fields in wire order.
    public var headers: [(String, String)]
    /// 1-based number of the TCP connection that carried it.
    public var connection: Int

    /// The first value of a header field, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.0.lowercased() == lower }?.1
    }
}
