import AsyncHTTPClient
import Crypto
import FerryTestSupport
import Foundation
import NIOHTTP1

/// One OAuth 2.0 sign-in against a ``TestServer`` over real HTTP, step by step as a browser and
/// an app would make it: the authorize page, its sign-in form (the cookie), the approve/deny
/// form (its CSRF token), the redirect, and the token endpoint. Redirects are never followed,
/// so each 302 is seen.
struct OAuthFlow: Sendable {
    let server: TestServer
    var clientID = "byteclub"
    var redirectURI = "http://127.0.0.1:49152/callback"
    var state = "state-\(UUID().uuidString.prefix(8))"
    var verifier = "verifier-" + String(repeating: "x", count: 40) + UUID().uuidString
    var method: String? = "S256"

    /// AsyncHTTPClient that returns 3xx answers as they are.
    static let noRedirects = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

    var challenge: String { Self.challenge(for: verifier) }

    static func challenge(for verifier: String) -> String {
        Data(SHA256.hash(data: Data(verifier.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// `/oauth2/authorize?…` with this flow's parameters; `overrides` replace them (nil: leave out).
    func authorizePath(_ overrides: [String: String?] = [:]) -> String {
        var parameters: [String: String?] = [
            "response_type": "code", "client_id": clientID, "redirect_uri": redirectURI, "state": state,
            "code_challenge": challenge, "code_challenge_method": method,
        ]
        parameters.merge(overrides) { $1 }
        return "/oauth2/authorize?" + Self.form(parameters.compactMapValues { $0 })
    }

    static func form(_ fields: [String: String]) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
    }

    func get(_ path: String, cookie: String? = nil) async throws -> TestServer.Reply {
        try await server.request(.GET, path, headers: cookie.map { [("Cookie", "byteclub_token=\($0)")] } ?? [], auth: false,
                                 client: Self.noRedirects)
    }

    func post(_ path: String, _ fields: [String: String], cookie: String? = nil,
              contentType: String = "application/x-www-form-urlencoded") async throws -> TestServer.Reply {
        var headers = [("Content-Type", contentType)]
        if let cookie { headers.append(("Cookie", "byteclub_token=\(cookie)")) }
        return try await server.request(.POST, path, headers: headers, body: Array(Self.form(fields).utf8), auth: false, client: Self.noRedirects)
    }

    /// The approve/deny page of a member signed in with `token`; its CSRF token.
    func consentPage(token: String) async throws -> (page: TestServer.Reply, csrf: String) {
        let page = try await get(authorizePath(), cookie: token)
        guard page.status == 200, let csrf = try Regex(#"name=csrf_token value="([^"]+)""#).matchesOf(page.text).first else {
            throw TestFailure("no approve/deny page (\(page.status)): \(page.text)")
        }
        return (page, csrf)
    }

    /// The member with `token` clicks `decision` ("approve" or "deny"); the 302's query.
    func decide(_ decision: String, token: String) async throws -> [String: String] {
        let (_, csrf) = try await consentPage(token: token)
        let reply = try await post("/oauth2/authorize", ["csrf_token": csrf, "decision": decision], cookie: token)
        guard reply.status == 302, let location = reply.header("Location") else {
            throw TestFailure("\(decision) did not redirect (\(reply.status)): \(reply.text)")
        }
        return Self.query(of: location)
    }

    /// Approves as the member with `token`; the code.
    func code(token: String) async throws -> String {
        let query = try await decide("approve", token: token)
        guard let code = query["code"], query["state"] == state else { throw TestFailure("no code in \(query)") }
        return code
    }

    /// `POST /oauth2/token` for `code` with this flow's verifier; `overrides` replace fields.
    func redeem(_ code: String, _ overrides: [String: String?] = [:]) async throws -> TestServer.Reply {
        var fields: [String: String?] = [
            "grant_type": "authorization_code", "code": code, "redirect_uri": redirectURI, "client_id": clientID, "code_verifier": verifier,
        ]
        fields.merge(overrides) { $1 }
        return try await post("/oauth2/token", fields.compactMapValues { $0 })
    }

    /// The query of a URL, decoded.
    static func query(of url: String) -> [String: String] {
        (URLComponents(string: url)?.queryItems ?? []).reduce(into: [:]) { $0[$1.name] = $1.value ?? "" }
    }
}
