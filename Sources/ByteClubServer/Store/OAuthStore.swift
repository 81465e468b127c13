import Foundation

/// The rows behind OAuth 2.0 sign-in (``OAuthRoutes``): registered clients and their redirect
/// URIs, pending consents (the approve/deny page's CSRF token), and authorization codes. Codes
/// and consent tokens are stored as SHA-256 digests, like access tokens, so a copy of the
/// database redeems nothing.
///
/// The rules every implementation keeps:
/// - A consent's token and a code work once, also with several server instances on one
///   database: taking a consent and redeeming a code each decide in one transaction, the
///   second of two at once (SQLite: one writer; PostgreSQL: the code's row locked `FOR
///   UPDATE`, the consent's deleted with `RETURNING`) sees the first's commit.
/// - Redeeming issues the access token (origin `oauth`, in the account store's table) in the
///   transaction that marks the code used; a code presented again gets `invalid_grant` and
///   revokes that token (RFC 6749 4.1.2). Which checks a code must pass: ``OAuthRules``.
protocol OAuthStore: Sendable {
    /// A client and its registered redirect URIs, or `nil` when `id` is not registered.
    func oauthClient(_ id: String) async throws -> OAuthClient?
    /// Registers a client, or adds redirect URIs to one (its name then stays).
    func addClient(id: String, name: String, redirectURIs: [String]) async throws -> OAuthClient
    /// Every registered client, oldest first.
    func oauthClients() async throws -> [OAuthClient]
    /// Records the authorization request a member is shown; returns the page's CSRF token,
    /// which the approve/deny form sends back (only its digest is kept).
    func createConsent(_ request: AuthorizationRequest, account: Int64, lifetime: TimeInterval) async throws -> String
    /// Takes (removes) the consent of `token` if it belongs to `account` and has not expired;
    /// `nil` otherwise (a forged or replayed form).
    func takeConsent(token: String, account: Int64) async throws -> AuthorizationRequest?
    /// A new authorization code for an approved request; only its digest is kept.
    func issueCode(for request: AuthorizationRequest, account: Int64, lifetime: TimeInterval) async throws -> String
    /// Redeems a code (RFC 6749 4.1.3, RFC 7636 4.6) in one transaction: checks it
    /// (``OAuthRules/refusal(_:clientID:redirectURI:verifier:now:)``), issues an access token of
    /// origin `oauth` and marks the code used. A code used before gets `invalid_grant` and
    /// revokes the token it gave.
    func redeem(code: String, clientID: String, redirectURI: String, verifier: String) async throws -> Result<(Account, token: String), OAuthError>
}

/// What a client asked for at `/oauth2/authorize`, once checked.
struct AuthorizationRequest: Sendable, Equatable {
    var clientID: String
    var redirectURI: String
    var state: String?
    var codeChallenge: String
}

/// An authorization code's row, as both stores read it for ``OAuthRules``.
struct StoredCode: Sendable {
    var accountID: Int64
    var clientID: String
    var redirectURI: String
    var codeChallenge: String
    var expiresAt: Double
    var usedAt: Double?
    /// The access token issued for it, once used (`nil` again if that token is gone).
    var accessTokenID: Int64?
}

/// The OAuth rules both stores follow, written once.
enum OAuthRules {
    /// The Byte Club app: a public client (no secret) with loopback redirects (RFC 8252),
    /// registered by each store's schema (SQLite v4, PostgreSQL step 2).
    static let byteClubClientID = "byteclub"
    static let byteClubName = "Byte Club"
    static let byteClubRedirects = ["http://127.0.0.1/callback", "http://[::1]/callback"]

    /// Consents expired are deleted when a new one is made; codes a day after they expired
    /// (until then a replay still revokes the token it gave).
    static let expiredCodesKept: TimeInterval = 86_400

    static let unknownCode = OAuthError.invalidGrant("unknown authorization code")
    static let reusedCode = OAuthError.invalidGrant("the authorization code was already used; the token issued for it is revoked")
    static let accountGone = OAuthError.invalidGrant("the account is gone")

    /// Why an unused code may not be redeemed by this request, or `nil` when it may. A refusal
    /// leaves the code usable (a wrong verifier does not burn the app's code).
    static func refusal(_ code: StoredCode, clientID: String, redirectURI: String, verifier: String, now: Double) -> OAuthError? {
        guard code.clientID == clientID else { return .invalidGrant("the code was issued to another client") }
        guard code.redirectURI == redirectURI else { return .invalidGrant("redirect_uri is not the one of the authorization request") }
        guard code.expiresAt >= now else { return .invalidGrant("the authorization code expired") }
        guard PKCE.challenge(for: verifier) == code.codeChallenge else {
            return .invalidGrant("code_verifier does not match the code_challenge")
        }
        return nil
    }
}
