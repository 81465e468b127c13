public import FerryEngine
public import Foundation

/// A response's metadata in URLSession's spelling. HTTP answers are ``HTTPURLResponse``s, so
/// `response as? HTTPURLResponse` works as on the platform.
open class URLResponse: @unchecked Sendable, CustomStringConvertible {  // immutable after init
    public let url: URL?
    public let mimeType: String?
    /// -1 when the length is not known.
    public let expectedContentLength: Int64
    public let textEncodingName: String?

    public init(url: URL, mimeType: String?, expectedContentLength: Int, textEncodingName: String?) {
        self.url = url
        self.mimeType = mimeType
        self.expectedContentLength = Int64(expectedContentLength)
        self.textEncodingName = textEncodingName
    }

    /// The name a download of this response would be saved under: `Content-Disposition`'s
    /// `filename`, else the URL's last component, else "Unknown".
    open var suggestedFilename: String? {
        let last = url?.lastPathComponent ?? ""
        return last.isEmpty || last == "/" ? "Unknown" : last
    }

    open var description: String { "<URLResponse \(url?.absoluteString ?? "")>" }
}

/// An HTTP response in URLSession's spelling; ``response`` is Ferry's ``Response``.
///
/// ```swift
/// let (data, response) = try await URLSession.shared.data(from: url)
/// guard let http = response as? HTTPURLResponse, http.statusCode == 200 else { throw Failure.status }
/// print(http.value(forHTTPHeaderField: "ETag") ?? "")
/// ```
open class HTTPURLResponse: URLResponse, @unchecked Sendable {
    /// Ferry's response this is the spelling of.
    public let response: Response

    public init(_ response: Response) {
        self.response = response
        let type = response.contentType
        super.init(url: response.url, mimeType: type?.mediaType, expectedContentLength: Int(response.expectedContentLength),
                   textEncodingName: type?.charset)
    }

    public convenience init?(url: URL, statusCode: Int, httpVersion: String?, headerFields: [String: String]?) {
        guard (0...999).contains(statusCode) else { return nil }
        self.init(Response(url: url, statusCode: statusCode, headers: HeaderFields((headerFields ?? [:]).map { ($0.key, $0.value) }),
                           httpVersion: httpVersion ?? "HTTP/1.1"))
    }

    public var statusCode: Int { response.statusCode }

    /// Every header, one value per name (repeated ones joined with `,`).
    public var allHeaderFields: [AnyHashable: Any] {
        response.headers.reduce(into: [AnyHashable: Any]()) { all, field in
            all[field.name] = (all[field.name] as? String).map { $0 + "," + field.value } ?? field.value
        }
    }

    public func value(forHTTPHeaderField field: String) -> String? {
        let values = response.headers.values(for: field)
        return values.isEmpty ? nil : values.joined(separator: ",")
    }

    open override var suggestedFilename: String? {
        if let disposition = response.headers["Content-Disposition"],
           let range = disposition.range(of: "filename=", options: .caseInsensitive) {
            let name = disposition[range.upperBound...].split(separator: ";").first.map(String.init) ?? ""
            let trimmed = name.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            if !trimmed.isEmpty { return (trimmed as NSString).lastPathComponent }
        }
        return super.suggestedFilename
    }

    /// The reason phrase of a status code, in lower case as the platform gives it.
    public static func localizedString(forStatusCode statusCode: Int) -> String {
        let phrases: [Int: String] = [
            100: "continue", 101: "switching protocols", 200: "no error", 201: "created", 202: "accepted",
            204: "no content", 206: "partial content", 301: "moved permanently", 302: "found", 303: "see other",
            304: "not modified", 307: "temporarily redirected", 308: "permanent redirect", 400: "bad request",
            401: "unauthorized", 403: "forbidden", 404: "not found", 405: "method not allowed", 409: "conflict",
            410: "no longer exists", 411: "length required", 412: "precondition failed", 413: "request too large",
            415: "unsupported media type", 416: "requested range not satisfiable", 429: "too many requests",
            500: "internal server error", 501: "unimplemented", 502: "bad gateway", 503: "service unavailable",
            504: "gateway timed out", 507: "insufficient storage",
        ]
        if let phrase = phrases[statusCode] { return phrase }
        switch statusCode {
        case 100..<200: return "informational"
        case 200..<300: return "success"
        case 300..<400: return "redirected"
        case 400..<500: return "client error"
        case 500..<600: return "server error"
        default: return "unknown"
        }
    }

    open override var description: String { "<HTTPURLResponse \(statusCode) \(url?.absoluteString ?? "")>" }
}
