public import Foundation

/// An HTTP cookie, in URLSession's spelling: what a server set with `Set-Cookie`, kept by an
/// ``HTTPCookieStorage`` and sent back in `Cookie` headers (RFC 6265).
///
/// ```swift
/// let cookies = HTTPCookie.cookies(
///     withResponseHeaderFields: ["Set-Cookie": "session=abc123; Path=/; HttpOnly"], for: URL(string: "https://example.com/login")!)
/// HTTPCookieStorage.shared.setCookies(cookies, for: URL(string: "https://example.com/")!, mainDocumentURL: nil)
/// HTTPCookie.requestHeaderFields(with: cookies)   // ["Cookie": "session=abc123"]
/// ```
///
/// `domain` follows the platform: `example.com` for a cookie sent to that host only, and
/// `.example.com` for one the server scoped with `Domain=` (sent to its subdomains too).
public final class HTTPCookie: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let value: String
    public let domain: String
    public let path: String
    /// When the cookie ends; nil for a session cookie (gone when the storage's process ends).
    public let expiresDate: Date?
    /// Sent over HTTPS only.
    public let isSecure: Bool
    /// Not for scripts (Ferry has none; kept as the server said).
    public let isHTTPOnly: Bool
    public let sameSitePolicy: HTTPCookieStringPolicy?
    /// When it was made: among cookies of the same path length, older ones are sent first.
    let created: Date

    /// Whether the cookie lives only as long as the session: it has no expiry date.
    public var isSessionOnly: Bool { expiresDate == nil }
    /// Cookies from `Set-Cookie` are version 0 (RFC 6265).
    public var version: Int { 0 }
    /// Whether the cookie goes to subdomains of ``domain`` too (`Domain=` was set).
    var isDomainCookie: Bool { domain.hasPrefix(".") }

    init(name: String, value: String, domain: String, path: String, expiresDate: Date?, isSecure: Bool,
         isHTTPOnly: Bool, sameSitePolicy: HTTPCookieStringPolicy?, created: Date = Date()) {
        self.name = name
        self.value = value
        self.domain = domain
        self.path = path
        self.expiresDate = expiresDate
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSitePolicy = sameSitePolicy
        self.created = created
    }

    /// A cookie from its properties, as on the platform: `.name`, `.value`, `.path` and either
    /// `.domain` or `.originURL` are required (nil without them). `.expires` takes a `Date` or
    /// a string; `.maximumAge` (seconds, as a string or number) wins over it; `.secure` is
    /// any value but `"FALSE"`/`false`; `.discard` `"TRUE"` makes a session cookie.
    public convenience init?(properties: [HTTPCookiePropertyKey: Any]) {
        func string(_ key: HTTPCookiePropertyKey) -> String? {
            switch properties[key] {
            case let text as String: text
            case let url as URL: url.absoluteString
            case let number as Int: String(number)
            case let number as Double: String(number)
            default: nil
            }
        }
        func flag(_ key: HTTPCookiePropertyKey) -> Bool {
            switch properties[key] {
            case let text as String: text.uppercased() != "FALSE"
            case let value as Bool: value
            case nil: false
            default: true
            }
        }
        guard let name = string(.name), !name.isEmpty, let value = string(.value), let path = string(.path) else { return nil }
        let domain: String
        if let given = string(.domain), !given.isEmpty {
            domain = given.lowercased()
        } else if let origin = string(.originURL), let host = URL(string: origin)?.host, !host.isEmpty {
            domain = host.lowercased()
        } else {
            return nil
        }
        var expires: Date?
        if let age = string(.maximumAge).flatMap({ Double($0) }) {
            expires = Date(timeIntervalSinceNow: age)
        } else if let date = properties[.expires] as? Date {
            expires = date
        } else if let text = string(.expires) {
            expires = CookieDate.parse(text)
        }
        if string(.discard)?.uppercased() == "TRUE" { expires = nil }
        self.init(
            name: name, value: value, domain: domain, path: path, expiresDate: expires, isSecure: flag(.secure),
            isHTTPOnly: flag(.httpOnly), sameSitePolicy: string(.sameSitePolicy).flatMap(HTTPCookieStringPolicy.init(parsing:)))
    }

    /// The cookie's properties, as ``init(properties:)`` takes them.
    public var properties: [HTTPCookiePropertyKey: Any]? {
        var all: [HTTPCookiePropertyKey: Any] = [.name: name, .value: value, .domain: domain, .path: path, .version: "0"]
        if let expiresDate { all[.expires] = expiresDate }
        if isSecure { all[.secure] = "TRUE" }
        if isHTTPOnly { all[.httpOnly] = "TRUE" }
        if let sameSitePolicy { all[.sameSitePolicy] = sameSitePolicy.rawValue }
        return all
    }

    /// The cookies that `Set-Cookie` fields set for a response from `url`; one that is
    /// malformed, too large, or scoped to a domain `url` is not in, is left out.
    /// A value holding several cookies joined with commas (the platform's
    /// `allHeaderFields`) is split between them.
    public static func cookies(withResponseHeaderFields headerFields: [String: String], for url: URL) -> [HTTPCookie] {
        headerFields.filter { $0.key.caseInsensitiveCompare("Set-Cookie") == .orderedSame }
            .flatMap { SetCookie.split($0.value) }
            .compactMap { SetCookie.parse($0, from: url) }
    }

    /// `["Cookie": "a=1; b=2"]` for `cookies` (in the order given), or no field for none.
    public static func requestHeaderFields(with cookies: [HTTPCookie]) -> [String: String] {
        guard !cookies.isEmpty else { return [:] }
        return ["Cookie": cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")]
    }

    /// The cookies a storage may take, as URLSession's `httpCookieAcceptPolicy` says.
    public enum AcceptPolicy: UInt, Sendable {
        case always = 0
        case never = 1
        /// Only cookies from the main document's domain; a Ferry request has no main
        /// document (as a URLSession task without `mainDocumentURL`), so this accepts them.
        case onlyFromMainDocumentDomain = 2
    }

    public static func == (lhs: HTTPCookie, rhs: HTTPCookie) -> Bool {
        lhs.name == rhs.name && lhs.domain == rhs.domain && lhs.path == rhs.path && lhs.value == rhs.value
            && lhs.expiresDate == rhs.expiresDate && lhs.isSecure == rhs.isSecure && lhs.isHTTPOnly == rhs.isHTTPOnly
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(domain)
        hasher.combine(path)
    }

    public var description: String {
        "<HTTPCookie \(name)=\(value.isEmpty ? "" : "…"); domain=\(domain); path=\(path)\(isSecure ? "; secure" : "")\(expiresDate.map { "; expires=\($0)" } ?? "")>"
    }

    /// Whether `host` (lower case) is the cookie's domain, or for a domain cookie one of its
    /// subdomains (RFC 6265 §5.1.3).
    func domainMatches(_ host: String) -> Bool {
        let bare = isDomainCookie ? String(domain.dropFirst()) : domain
        return host == bare || (isDomainCookie && host.hasSuffix("." + bare))
    }

    /// Whether the cookie goes with a request to `url` at `now` (RFC 6265 §5.4: domain,
    /// path, `Secure` over HTTPS only, not expired).
    func matches(_ url: URL, at now: Date) -> Bool {
        guard let host = url.host?.lowercased() else { return false }
        if let expiresDate, expiresDate <= now { return false }
        if isSecure, url.scheme?.lowercased() != "https" { return false }
        guard domainMatches(host) else { return false }
        let requestPath = url.path.isEmpty ? "/" : url.path
        return requestPath == path
            || (requestPath.hasPrefix(path) && (path.hasSuffix("/") || requestPath.dropFirst(path.count).first == "/"))
    }
}

/// The names of ``HTTPCookie``'s properties, as on the platform.
public struct HTTPCookiePropertyKey: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let name = HTTPCookiePropertyKey("Name")
    public static let value = HTTPCookiePropertyKey("Value")
    public static let originURL = HTTPCookiePropertyKey("OriginURL")
    public static let version = HTTPCookiePropertyKey("Version")
    public static let domain = HTTPCookiePropertyKey("Domain")
    public static let path = HTTPCookiePropertyKey("Path")
    public static let secure = HTTPCookiePropertyKey("Secure")
    public static let expires = HTTPCookiePropertyKey("Expires")
    public static let comment = HTTPCookiePropertyKey("Comment")
    public static let commentURL = HTTPCookiePropertyKey("CommentURL")
    public static let discard = HTTPCookiePropertyKey("Discard")
    public static let maximumAge = HTTPCookiePropertyKey("Max-Age")
    public static let port = HTTPCookiePropertyKey("Port")
    public static let sameSitePolicy = HTTPCookiePropertyKey("SameSite")
    /// Ferry's name for the `HttpOnly` attribute (the platform keeps it unnamed).
    public static let httpOnly = HTTPCookiePropertyKey("HttpOnly")
}

/// A cookie's `SameSite` attribute.
public struct HTTPCookieStringPolicy: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let sameSiteLax = HTTPCookieStringPolicy(rawValue: "lax")
    public static let sameSiteStrict = HTTPCookieStringPolicy(rawValue: "strict")

    /// `Lax`, `Strict` (any case); nil for anything else (`None` among them).
    init?(parsing text: String) {
        switch text.lowercased() {
        case "lax": self = .sameSiteLax
        case "strict": self = .sameSiteStrict
        default: return nil
        }
    }
}
