public import Foundation
import Ferry

/// Signing in the way native apps do (RFC 8252): OAuth 2.0 authorization code with PKCE and a
/// loopback redirect. The app listens on `127.0.0.1`, the member approves it on the server's
/// page in a browser, the browser brings the code back to the listener, and the app redeems
/// the code (with its PKCE verifier) for an access token through a `URLSession`.
///
/// ```swift
/// let signIn = try BrowserSignIn(server: URL(string: "http://127.0.0.1:8080")!)
/// print("open \(signIn.authorizeURL)")            // or xdg-open it
/// let code = try await signIn.waitForApproval(timeout: .seconds(300))
/// let account = try await signIn.redeem(code)      // ByteClubAccount(server, token, member)
/// try AccountFile().save(account)
/// ```
public struct BrowserSignIn: Sendable {
    /// The Byte Club app's `client_id`, registered by every byteclub-server.
    public static let clientID = "byteclub"
    public let server: URL
    /// `http://127.0.0.1:<port>/callback`: the listener's port, any of which the server accepts.
    public let redirectURI: String
    /// The page to open in the browser.
    public let authorizeURL: URL
    let pkce: PKCE
    let state: String
    let listener: LoopbackRedirect

    /// Starts listening for the browser's answer and makes the authorization request's URL.
    public init(server: URL) throws {
        self.server = server
        listener = try LoopbackRedirect()
        pkce = PKCE()
        state = PKCE.randomState()
        redirectURI = "http://127.0.0.1:\(listener.port)/callback"
        authorizeURL = ClubRoutes(server: server).authorize([
            "response_type": "code", "client_id": Self.clientID, "redirect_uri": redirectURI, "state": state,
            "code_challenge": pkce.challenge, "code_challenge_method": PKCE.method,
        ])
    }

    /// Waits for the browser to come back (at most `timeout`; cancelling stops it) and answers
    /// it with a page; returns the authorization code. Throws ``ByteClubError/notApproved(_:)``
    /// when the member denied (or time ran out), ``ByteClubError/badRequest(status:_:)`` when
    /// the server refused the request or the answer is not this sign-in's (`state`).
    public func waitForApproval(timeout: Duration) async throws -> String {
        var outcome: Result<String, ByteClubError> = .failure(.notApproved("no answer"))
        _ = try await listener.wait(for: "/callback", timeout: timeout) { query in
            outcome = Self.outcome(of: query, state: state)
            switch outcome {
            case .success: return (200, "<h1>Signed in</h1><p id=result>Byte Club is signed in. You can close this tab and go back to the terminal.</p>")
            case .failure(let error):
                let escaped = error.description.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                return (error.exitStatus == 3 ? 403 : 400, "<h1>Not signed in</h1><p id=result>\(escaped)</p>")
            }
        }
        return try outcome.get()
    }

    /// What the redirect's query says (RFC 6749 4.1.2, 4.1.2.1): the code, or why not.
    static func outcome(of query: [String: String], state: String) -> Result<String, ByteClubError> {
        guard query["state"] == state else {
            return .failure(.badRequest(status: 400, "the browser's answer is not this sign-in's (its state differs): ignored; sign in again"))
        }
        if let error = query["error"] {
            let detail = query["error_description"].map { "\(error): \($0)" } ?? error
            if error == "access_denied" { return .failure(.notApproved("the sign-in was denied on the server's page (\(detail))")) }
            return .failure(.badRequest(status: 400, "the server refused the sign-in request (\(detail))"))
        }
        guard let code = query["code"], !code.isEmpty else {
            return .failure(.badRequest(status: 400, "the browser's answer has neither a code nor an error"))
        }
        return .success(code)
    }

    /// The token for `code`: `POST /oauth2/token` through an ephemeral session.
    public func redeem(_ code: String) async throws -> ByteClubAccount {
        var request = URLRequest(url: ClubRoutes(server: server).token)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let form = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI), ("client_id", Self.clientID),
                    ("code_verifier", pkce.verifier)]
        request.httpBody = Data(form.map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&").utf8)
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response): (Data, URLResponse)
        do { (data, response) = try await session.data(for: request) } catch let error as URLError { throw ByteClubError.from(error) }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            let error = object?["error"] as? String ?? HTTPStatusText.phrase(status)
            let detail = (object?["error_description"] as? String).map { "\(error): \($0)" } ?? error
            if status >= 500 { throw ByteClubError.server(status: status, detail) }
            throw ByteClubError.badRequest(status: status, "the server did not give a token for the code (\(detail))")
        }
        guard let token = try? JSONDecoder().decode(TokenResponse.self, from: data), token.tokenType.lowercased() == "bearer" else {
            throw ByteClubError.server(status: 200, "the token endpoint's answer is not an OAuth bearer token")
        }
        return ByteClubAccount(server: server, accessToken: token.accessToken, member: token.accountName)
    }

    struct TokenResponse: Decodable {
        var accessToken: String
        var tokenType: String
        var accountName: String?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token", tokenType = "token_type", accountName = "account_name"
        }
    }
}
