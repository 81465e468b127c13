public import FerryCore
public import Foundation
import NIOHTTP1

/// What to send: the `URLRequest` of Ferry.
///
/// ```swift
/// var request = Request(url: URL(string: "https://example.com/upload")!)
/// request.method = "PUT"
/// request.headers["Content-Type"] = "image/jpeg"
/// request.expectedSHA256 = nil        // or the hex digest a download must match
/// ```
public struct Request: Sendable, Hashable {
    public var url: URL
    /// `GET` unless set.
    public var method: String
    public var headers: HeaderFields
    /// A small in-memory body for data tasks. Upload tasks take their body separately.
    public var body: Data?
    /// Idle time-out for this request, overriding the configuration's
    /// `timeoutIntervalForRequest` when set.
    public var timeoutInterval: TimeInterval?
    /// For downloads: the hex SHA-256 the bytes must have. A mismatch fails the task
    /// with ``FerryError/Code/integrityCheckFailed`` and the file is not delivered.
    public var expectedSHA256: String?
    /// false: the transfer's cookie jar is neither asked for a `Cookie` header nor given the
    /// response's `Set-Cookie` fields (URLRequest's `httpShouldHandleCookies`).
    public var handlesCookies = true
    /// How the request may use the transfer's cache; nil: the session's (URLRequest's `cachePolicy`).
    public var cacheUse: CacheUse?

    public init(url: URL, method: String = "GET", headers: HeaderFields = [:], body: Data? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }
}

/// What came back: the `HTTPURLResponse` of Ferry.
public struct Response: Sendable, Hashable {
    /// The URL that answered (after redirects).
    public var url: URL
    public var statusCode: Int
    public var headers: HeaderFields
    /// HTTP version, e.g. "HTTP/1.1" or "HTTP/2".
    public var httpVersion: String

    public init(url: URL, statusCode: Int, headers: HeaderFields, httpVersion: String = "HTTP/1.1") {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.httpVersion = httpVersion
    }

    init(_ head: HTTPResponseHead, url: URL) {
        var headers = HeaderFields()
        headers.reserveCapacity(head.headers.count)
        for (name, value) in head.headers { headers.add(name: name, value: value) }
        self.init(url: url, statusCode: Int(head.status.code), headers: headers, httpVersion: head.version.ferryName)
    }

    /// Whether the status is one the engine follows to `Location` (301, 302, 303, 307, 308).
    public var isRedirect: Bool { [301, 302, 303, 307, 308].contains(statusCode) }

    /// `Content-Length`, or -1 when unknown (as `expectedContentLength` in URLSession).
    public var expectedContentLength: Int64 {
        guard let value = headers["Content-Length"] else { return -1 }
        return Int64(value) ?? Int64(value.trimmingCharacters(in: .whitespaces)) ?? -1
    }

    /// `Content-Type`, read (nil when there is none).
    public var contentType: ContentType? { headers["Content-Type"].map(ContentType.init) }

    /// The media type without parameters, e.g. "application/json".
    public var mimeType: String? { contentType?.mediaType }

    /// The strong or weak entity tag, as sent.
    /// Whether the body was sent content-coded (`Content-Encoding: gzip` or `deflate`): the
    /// engine hands it over decoded, so `Content-Length` and the server's digests describe
    /// other bytes than those delivered.
    public var isContentCoded: Bool {
        guard let coding = headers["Content-Encoding"]?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return !coding.isEmpty && coding != "identity"
    }
    public var etag: String? { headers["ETag"] }
    public var lastModified: String? { headers["Last-Modified"] }
    public var acceptsByteRanges: Bool { headers["Accept-Ranges"]?.lowercased().contains("bytes") ?? false }
}

extension HTTPVersion {
    /// As ``Response/httpVersion`` names it: `HTTP/1.1`, `HTTP/2`.
    var ferryName: String { major >= 2 ? "HTTP/2" : "HTTP/\(major).\(minor)" }
}
