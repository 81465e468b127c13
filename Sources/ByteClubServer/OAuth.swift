import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// PKCE (RFC 7636) on the server's side: which verifiers and challenges are well formed, and
/// the S256 transformation (`plain` is refused).
enum PKCE {
    /// `BASE64URL(SHA256(ASCII(verifier)))`, without padding.
    static func challenge(for verifier: String) -> String {
        Data(SHA256.hash(data: Data(verifier.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// 43 to 128 characters of `[A-Za-z0-9-._~]` (RFC 7636 4.1).
    static func isVerifier(_ text: String) -> Bool {
        (43...128).contains(text.utf8.count) && text.utf8.allSatisfy(isUnreserved)
    }

    /// An S256 challenge: 43 characters of base64url (a SHA-256 without padding).
    static func isS256Challenge(_ text: String) -> Bool {
        text.utf8.count == 43 && text.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || "-._~".utf8.contains(byte)
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

/// Which redirect URIs a registration allows: the same string, or, for a registered `http` URI
/// whose host is a loopback IP literal (`127.0.0.1`, `[::1]`), the same URI on any port (RFC
/// 8252 7.3: a native app listens on whatever port the system gives it). `localhost` is not
/// special: it could resolve elsewhere (RFC 8252 8.3).
///
/// ```swift
/// RedirectURIs.matches(registered: "http://127.0.0.1/callback", requested: "http://127.0.0.1:53124/callback")  // true
/// RedirectURIs.matches(registered: "http://localhost/callback", requested: "http://localhost:53124/callback")  // false
/// ```
public enum RedirectURIs {
    public static func matches(registered: String, requested: String) -> Bool {
        if registered == requested { return true }
        guard let loopback = components(registered), let asked = components(requested), isLoopback(loopback) else { return false }
        return asked.scheme?.lowercased() == "http" && host(asked) == host(loopback)
            && asked.percentEncodedPath == loopback.percentEncodedPath && asked.percentEncodedQuery == loopback.percentEncodedQuery
            && asked.fragment == nil && asked.user == nil && asked.password == nil
    }

    /// Whether `uri` may be registered: absolute, without a fragment or credentials, and `http`
    /// only for a loopback host (an app's own listener); otherwise `https` or an app's
    /// private-use scheme (`org.example.app:/callback`, RFC 8252 7.1).
    public static func isRegistrable(_ uri: String) -> Bool {
        guard let parts = components(uri), let scheme = parts.scheme?.lowercased(), parts.fragment == nil, parts.user == nil,
              parts.password == nil
        else { return false }
        switch scheme {
        case "http": return isLoopback(parts) || host(parts) == "localhost"
        case "https": return !(host(parts) ?? "").isEmpty
        default: return scheme.contains(".")
        }
    }

    private static func components(_ uri: String) -> URLComponents? {
        guard let parts = URLComponents(string: uri), parts.scheme != nil else { return nil }
        return parts
    }

    private static func host(_ parts: URLComponents) -> String? {
        parts.host.map { $0.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")) }
    }

    private static func isLoopback(_ parts: URLComponents) -> Bool {
        parts.scheme?.lowercased() == "http" && ["127.0.0.1", "::1"].contains(host(parts) ?? "")
    }
}

/// An error of the token endpoint, rendered as RFC 6749 5.2 says: JSON `{"error",
/// "error_description"}`, 400 (401 for `invalid_client`), never cached.
struct OAuthError: Error, HTTPResponseError, Sendable, Equatable {
    let code: String
    let detail: String

    static func invalidRequest(_ detail: String) -> OAuthError { OAuthError(code: "invalid_request", detail: detail) }
    static func invalidClient(_ detail: String) -> OAuthError { OAuthError(code: "invalid_client", detail: detail) }
    static func invalidGrant(_ detail: String) -> OAuthError { OAuthError(code: "invalid_grant", detail: detail) }
    static func unsupportedGrantType(_ detail: String) -> OAuthError { OAuthError(code: "unsupported_grant_type", detail: detail) }

    var status: HTTPResponse.Status { code == "invalid_client" ? .unauthorized : .badRequest }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try .jsonObject(["error": code, "error_description": detail], status: status, headers: OAuthRoutes.noStore)
    }
}
