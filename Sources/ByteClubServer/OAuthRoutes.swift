import Foundation
import HTTPTypes
import Hummingbird

/// OAuth 2.0 authorization code grant with PKCE for native apps (RFC 6749, RFC 7636, RFC 8252):
///
/// - `GET /oauth2/authorize`: checks the client and its redirect URI (errors shown on the page,
///   never redirected: RFC 6749 4.1.2.1), then the rest (errors redirected with `state`), and
///   shows the signed-in member an approve/deny page, or a sign-in form first.
/// - `POST /oauth2/signin`: the sign-in form (`access_token`, `return_to`): sets the page's cookie.
/// - `POST /oauth2/authorize`: the approve/deny form (`csrf_token`, `decision`): 302 to the
///   redirect URI with `code` and `state`, or `error=access_denied`.
/// - `POST /oauth2/token`: redeems a code for an access token (origin `oauth`).
struct OAuthRoutes: Sendable {
    let state: ServerState
    static let noStore: HTTPFields = [.cacheControl: "no-store", HTTPField.Name("Pragma")!: "no-cache"]

    func add(to router: Routes) {
        router.get("/oauth2/authorize") { request, _ in try await authorize(request) }
        router.post("/oauth2/authorize") { request, _ in try await decide(request) }
        router.post("/oauth2/signin") { request, _ in try await signIn(request) }
        router.post("/oauth2/token") { request, _ in try await token(request) }
    }

    // MARK: Authorization endpoint

    func authorize(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters.reduce(into: [String: String]()) { $0[String($1.key)] = String($1.value) }
        let (asked, client): (AuthorizationRequest, OAuthClient)
        switch try await check(query) {
        case .refused(let response): return response
        case .accepted(let request, let found): (asked, client) = (request, found)
        }
        guard let account = try await cookieAccount(request), let accountID = account.id else {
            return OAuthPages.signIn(client: client, returnTo: request.uri.description)
        }
        let csrf = try await state.store.createConsent(asked, account: accountID, lifetime: state.configuration.oauthConsentLifetime)
        return OAuthPages.consent(client: client, account: account.name, redirectURI: asked.redirectURI, csrfToken: csrf)
    }

    enum Checked {
        case accepted(AuthorizationRequest, OAuthClient)
        case refused(Response)
    }

    /// RFC 6749 4.1.1 and RFC 7636 4.3, in the order 4.1.2.1 asks: client and redirect URI
    /// first (their errors are a page), then the rest (errors go back to the client).
    func check(_ query: [String: String]) async throws -> Checked {
        guard let clientID = query["client_id"], !clientID.isEmpty else {
            return .refused(OAuthPages.error(.badRequest, "The request names no client (client_id is missing)."))
        }
        guard let client = try await state.store.oauthClient(clientID) else {
            return .refused(OAuthPages.error(.badRequest, "No app named \"\(clientID)\" is registered with this server (unknown client_id)."))
        }
        guard let redirect = query["redirect_uri"], !redirect.isEmpty else {
            return .refused(OAuthPages.error(.badRequest, "The request has no redirect_uri."))
        }
        guard client.redirectURIs.contains(where: { RedirectURIs.matches(registered: $0, requested: redirect) }) else {
            return .refused(OAuthPages.error(.badRequest, "The redirect_uri is not registered for \(client.name); the sign-in stops here."))
        }
        let back = { (error: String, detail: String) in
            Checked.refused(Self.redirect(to: redirect, ["error": error, "error_description": detail, "state": query["state"]]))
        }
        guard let responseType = query["response_type"] else { return back("invalid_request", "response_type is missing") }
        guard responseType == "code" else { return back("unsupported_response_type", "only response_type=code is supported") }
        guard let challenge = query["code_challenge"], !challenge.isEmpty else {
            return back("invalid_request", "code_challenge is required (PKCE with S256)")
        }
        guard query["code_challenge_method"] == "S256" else {
            return back("invalid_request", "code_challenge_method must be S256 (plain is not accepted)")
        }
        guard PKCE.isS256Challenge(challenge) else { return back("invalid_request", "code_challenge is not a base64url SHA-256") }
        return .accepted(AuthorizationRequest(clientID: clientID, redirectURI: redirect, state: query["state"], codeChallenge: challenge), client)
    }

    /// The approve/deny form: the CSRF token names the consent recorded for this member's page.
    func decide(_ request: Request) async throws -> Response {
        let form = try await self.form(request)
        guard let account = try await cookieAccount(request), let accountID = account.id else {
            return OAuthPages.error(.forbidden, "You are not signed in any more: start the sign-in again from the app.")
        }
        guard let csrf = form["csrf_token"], !csrf.isEmpty,
              let asked = try await state.store.takeConsent(token: csrf, account: accountID)
        else {
            return OAuthPages.error(.forbidden, "This form was not made for you, was already used, or expired: start the sign-in again from the app.")
        }
        switch form["decision"] {
        case "approve":
            let code = try await state.store.issueCode(for: asked, account: accountID, lifetime: state.configuration.oauthCodeLifetime)
            state.logger.info("oauth: approved", metadata: ["client": "\(asked.clientID)", "account": "\(account.name)"])
            return Self.redirect(to: asked.redirectURI, ["code": code, "state": asked.state])
        case "deny":
            state.logger.info("oauth: denied", metadata: ["client": "\(asked.clientID)", "account": "\(account.name)"])
            return Self.redirect(to: asked.redirectURI, ["error": "access_denied", "error_description": "the member denied the request", "state": asked.state])
        default:
            return OAuthPages.error(.badRequest, "The form's decision is neither approve nor deny.")
        }
    }

    /// The sign-in form of the authorize page: a valid token sets the page's cookie and goes
    /// back to the authorize URL (only there: `return_to` is no open redirect).
    func signIn(_ request: Request) async throws -> Response {
        let form = try await self.form(request)
        let returnTo = form["return_to"] ?? ""
        guard returnTo.hasPrefix("/oauth2/authorize?") else {
            return OAuthPages.error(.badRequest, "The sign-in form has no authorization request to go back to.")
        }
        let token = form["access_token"] ?? ""
        let problem: String
        let lookup: TokenLookup = token.isEmpty ? .unknown : try await state.store.lookup(token: token)
        switch lookup {
        case .valid:
            return Response(status: .seeOther, headers: [.location: returnTo, .setCookie: PageRoutes.signInCookie(token), .cacheControl: "no-store"])
        case .revoked: problem = "That access token was revoked."
        case .unknown: problem = "That is not a valid access token."
        }
        let query = URLComponents(string: returnTo)?.queryItems ?? []
        let clientID = query.first { $0.name == "client_id" }?.value ?? ""
        guard let client = try await state.store.oauthClient(clientID) else {
            return OAuthPages.error(.badRequest, "No app named \"\(clientID)\" is registered with this server (unknown client_id).")
        }
        return OAuthPages.signIn(client: client, returnTo: returnTo, problem: problem)
    }

    // MARK: Token endpoint

    func token(_ request: Request) async throws -> Response {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            throw OAuthError.invalidRequest("send the parameters as application/x-www-form-urlencoded")
        }
        let form = try await self.form(request)
        guard let grant = form["grant_type"] else { throw OAuthError.invalidRequest("grant_type is missing") }
        guard grant == "authorization_code" else { throw OAuthError.unsupportedGrantType("only grant_type=authorization_code is supported") }
        for name in ["client_id", "code", "redirect_uri", "code_verifier"] where (form[name] ?? "").isEmpty {
            throw OAuthError.invalidRequest("\(name) is missing")
        }
        let clientID = form["client_id"]!, verifier = form["code_verifier"]!
        guard try await state.store.oauthClient(clientID) != nil else { throw OAuthError.invalidClient("unknown client_id") }
        guard PKCE.isVerifier(verifier) else {
            throw OAuthError.invalidRequest("code_verifier must have 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'")
        }
        switch try await state.store.redeem(code: form["code"]!, clientID: clientID, redirectURI: form["redirect_uri"]!, verifier: verifier) {
        case .failure(let error):
            state.logger.info("oauth: code refused", metadata: ["client": "\(clientID)", "reason": "\(error.detail)"])
            throw error
        case .success(let issued):
            let account = issued.0
            state.logger.info("oauth: token issued", metadata: ["client": "\(clientID)", "account": "\(account.name)"])
            return try .jsonObject(["access_token": issued.token, "token_type": "bearer", "uid": account.id!, "account_name": account.name],
                                   headers: Self.noStore)
        }
    }

    // MARK: Helpers

    /// The account of the page's cookie (the same sign-in as `/`), if it is valid.
    func cookieAccount(_ request: Request) async throws -> Account? {
        guard let token = request.cookies[PageRoutes.cookie]?.value, !token.isEmpty,
              case .valid(let account) = try await state.store.lookup(token: token)
        else { return nil }
        return account
    }

    /// A form body's fields; a field given twice is refused (RFC 6749 3.1, 3.2).
    func form(_ request: Request) async throws -> [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in ServerState.decodeForm(String(buffer: try await state.collect(request, limit: 64 << 10))) {
            guard fields.updateValue(value, forKey: name) == nil else { throw OAuthError.invalidRequest("\(name) is given twice") }
        }
        return fields
    }

    /// 302 to `uri` with `parameters` added to its query (nil values left out).
    static func redirect(to uri: String, _ parameters: KeyValuePairs<String, String?>) -> Response {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let query = parameters.compactMap { name, value in
            value.map { "\(name)=\($0.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
        }.joined(separator: "&")
        return Response(status: .found, headers: [.location: uri + (uri.contains("?") ? "&" : "?") + query, .cacheControl: "no-store"])
    }
}
