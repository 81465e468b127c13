import FerryCore
public import FerryEngine
public import Foundation

/// A request in URLSession's spelling, for code ported from Apple's platforms:
///
/// ```swift
/// var request = URLRequest(url: URL(string: "https://api.example.com/notes")!)
/// request.httpMethod = "POST"
/// request.setValue("application/json", forHTTPHeaderField: "Content-Type")
/// request.httpBody = try JSONEncoder().encode(note)
/// let (data, response) = try await URLSession.shared.data(for: request)
/// ```
///
/// It is Ferry's ``Request`` underneath (``request``), with URLSession's optional URL,
/// optional method and dictionary of headers. Header names are case-insensitive, as there.
public struct URLRequest: Hashable, Sendable, CustomStringConvertible {
    /// How the request may use the session's `URLCache`.
    public enum CachePolicy: UInt, Sendable {
        case useProtocolCachePolicy = 0
        case reloadIgnoringLocalCacheData = 1
        case reloadIgnoringLocalAndRemoteCacheData = 4
        case returnCacheDataElseLoad = 2
        case returnCacheDataDontLoad = 3
        case reloadRevalidatingCacheData = 5
        public static var reloadIgnoringCacheData: CachePolicy { .reloadIgnoringLocalCacheData }
    }

    public var url: URL?
    /// `GET` unless set; setting nil gives `GET` back, as on the platform.
    public var httpMethod: String? {
        get { method }
        set { method = newValue ?? "GET" }
    }
    private var method = "GET"
    public var httpBody: Data?
    /// 60 s unless set; only a value set here overrides the configuration's
    /// `timeoutIntervalForRequest` (the platform's rule).
    public var timeoutInterval: TimeInterval {
        get { explicitTimeout ?? 60 }
        set { explicitTimeout = newValue }
    }
    private var explicitTimeout: TimeInterval?
    public var cachePolicy: CachePolicy
    /// false: the session's cookies are not sent with this request, nor stored from its
    /// response (the session's `httpCookieStorage`).
    public var httpShouldHandleCookies = true
    public var allowsCellularAccess = true
    public var allowsExpensiveNetworkAccess = true
    public var allowsConstrainedNetworkAccess = true
    /// The expected SHA-256 of the response body (Ferry's: the task fails with a digest mismatch).
    public var expectedSHA256: String?
    private var headers = HeaderFields()

    public init(url: URL, cachePolicy: CachePolicy = .useProtocolCachePolicy, timeoutInterval: TimeInterval = 60) {
        self.url = url
        self.cachePolicy = cachePolicy
        if timeoutInterval != 60 { explicitTimeout = timeoutInterval }
    }

    /// The URLSession spelling of a Ferry request.
    public init(_ request: Request) {
        self.init(url: request.url)
        explicitTimeout = request.timeoutInterval
        method = request.method
        headers = request.headers
        httpBody = request.body
        expectedSHA256 = request.expectedSHA256
        httpShouldHandleCookies = request.handlesCookies
    }

    /// Every header, one value per name (repeated ones joined with `,`); nil when there are none.
    public var allHTTPHeaderFields: [String: String]? {
        get {
            guard headers.count > 0 else { return nil }
            return headers.reduce(into: [String: String]()) { all, field in
                all[field.name] = all[field.name].map { $0 + "," + field.value } ?? field.value
            }
        }
        set {
            headers = HeaderFields()
            for (name, value) in newValue ?? [:] { headers.add(name: name, value: value) }
        }
    }

    public func value(forHTTPHeaderField field: String) -> String? {
        let values = headers.values(for: field)
        return values.isEmpty ? nil : values.joined(separator: ",")
    }

    /// Replaces the header (nil removes it).
    public mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        var kept = HeaderFields()
        for existing in headers where existing.name.lowercased() != field.lowercased() { kept.add(name: existing.name, value: existing.value) }
        if let value { kept.add(name: field, value: value) }
        headers = kept
    }

    /// Adds a value to the header (joined with `,` when read).
    public mutating func addValue(_ value: String, forHTTPHeaderField field: String) {
        headers.add(name: field, value: value)
    }

    /// Ferry's request for this one; nil when it has no URL.
    public var request: Request? {
        guard let url else { return nil }
        var request = Request(url: url, method: method.uppercased(), headers: headers, body: httpBody)
        request.timeoutInterval = explicitTimeout
        request.expectedSHA256 = expectedSHA256
        request.handlesCookies = httpShouldHandleCookies
        // The default leaves the choice to the session's requestCachePolicy.
        request.cacheUse = cachePolicy == .useProtocolCachePolicy ? nil : cachePolicy.cacheUse
        return request
    }

    public var description: String { "\(method) \(url?.absoluteString ?? "(no URL)")" }
}

extension URLRequest.CachePolicy {
    /// Ferry's name for the policy.
    var cacheUse: CacheUse {
        switch self {
        case .useProtocolCachePolicy: .useProtocolCachePolicy
        case .reloadIgnoringLocalCacheData: .reloadIgnoringLocalCacheData
        case .reloadIgnoringLocalAndRemoteCacheData: .reloadIgnoringLocalAndRemoteCacheData
        case .returnCacheDataElseLoad: .returnCacheDataElseLoad
        case .returnCacheDataDontLoad: .returnCacheDataDontLoad
        case .reloadRevalidatingCacheData: .reloadRevalidatingCacheData
        }
    }

    init(_ use: CacheUse) {
        switch use {
        case .useProtocolCachePolicy: self = .useProtocolCachePolicy
        case .reloadIgnoringLocalCacheData: self = .reloadIgnoringLocalCacheData
        case .reloadIgnoringLocalAndRemoteCacheData: self = .reloadIgnoringLocalAndRemoteCacheData
        case .returnCacheDataElseLoad: self = .returnCacheDataElseLoad
        case .returnCacheDataDontLoad: self = .returnCacheDataDontLoad
        case .reloadRevalidatingCacheData: self = .reloadRevalidatingCacheData
        }
    }
}
