import Crypto
import Foundation

/// A PKCE pair (RFC 7636) for one sign-in: the secret `verifier` the app keeps, and the
/// `challenge` (S256) it sends with the authorization request. Whoever catches the code on its
/// way back cannot redeem it without the verifier.
///
/// ```swift
/// let pkce = PKCE()
/// // GET /oauth2/authorize?…&code_challenge=\(pkce.challenge)&code_challenge_method=S256
/// // POST /oauth2/token …&code_verifier=\(pkce.verifier)
/// ```
public struct PKCE: Sendable, Equatable {
    /// 64 characters of the unreserved set, from the system's secure generator (RFC 7636 4.1
    /// allows 43–128; 64 carry 386 bits).
    public let verifier: String
    /// `BASE64URL(SHA256(verifier))`, without padding.
    public var challenge: String { Self.challenge(for: verifier) }
    /// Always `S256`: `plain` would send the secret itself.
    public static let method = "S256"

    /// A fresh pair.
    public init() { verifier = Self.random(count: 64, from: Self.unreserved) }

    /// A pair with a verifier of your own (tests; RFC 7636's appendix B).
    public init(verifier: String) { self.verifier = verifier }

    public static func challenge(for verifier: String) -> String {
        Data(SHA256.hash(data: Data(verifier.utf8))).base64URL
    }

    /// An unguessable `state` for one authorization request (RFC 6749 10.12).
    public static func randomState() -> String { random(count: 32, from: unreserved) }

    static let unreserved = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `count` characters of `alphabet`, each uniform (no modulo bias) from a CSPRNG.
    static func random(count: Int, from alphabet: [Character]) -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }
}

extension Data {
    /// Base64url without padding (RFC 4648 5).
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
