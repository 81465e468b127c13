import Foundation
import HTTPTypes
import Hummingbird

/// Credentials a request carries, in any of the forms the tutorials' clients sent them.
struct Credentials: Sendable {
    var token: String?
    var consumerKey: String?
    var clientID: String?

    /// `Authorization: Bearer <token>`, `Authorization: OAuth oauth_consumer_key="…", oauth_token="…"`
    /// (Dropbox v1's PLAINTEXT OAuth 1), `Authorization: Client-ID <id>` (Imgur), or `?access_token=`.
    init(request: Request) {
        if let header = request.headers[.authorization] {
            let trimmed = header.trimmingCharacters(in: .whitespaces)
            if let space = trimmed.firstIndex(of: " ") {
                let scheme = trimmed[..<space].lowercased()
                let value = trimmed[space...].trimmingCharacters(in: .whitespaces)
                switch scheme {
                case "bearer": token = value
                case "client-id": clientID = value
                case "oauth":
                    for pair in value.split(separator: ",") {
                        let parts = pair.split(separator: "=", maxSplits: 1)
                        guard parts.count == 2 else { continue }
                        let key = parts[0].trimmingCharacters(in: .whitespaces)
                        let raw = parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                        let decoded = raw.removingPercentEncoding ?? raw
                        if key == "oauth_token" { token = decoded }
                        if key == "oauth_consumer_key" { consumerKey = decoded }
                    }
                default: break
                }
            }
        }
        if token == nil, let query = request.uri.queryParameters["access_token"] {
            token = String(query)
        }
        if token == nil, let cookie = request.cookies[PageRoutes.cookie] {
            token = cookie.value
        }
    }
}

extension ServerState {
    /// The account a files-API request acts for: 401 without a valid token (saying so when the
    /// token was revoked), 403 when the request names an app key that is not the account's app.
    /// Looked up in the database on every request, so a revocation by `byteclub-server accounts
    /// revoke` (another process) counts from the next request on.
    func filesAccount(_ request: Request) async throws -> Account {
        let credentials = Credentials(request: request)
        guard let token = credentials.token, !token.isEmpty else {
            throw APIError(.unauthorized, "Missing access token: send 'Authorization: Bearer <token>'")
        }
        let account: Account
        switch try await store.lookup(token: token) {
        case .valid(let found): account = found
        case .revoked: throw APIError.revokedToken
        case .unknown: throw APIError.unauthorized
        }
        if let key = credentials.consumerKey, key != account.appKey {
            throw APIError(.forbidden, "This app (oauth_consumer_key) is not allowed to access this account")
        }
        return account
    }

    /// The account an images-API request acts for: `Client-ID` or a bearer token.
    func imagesAccount(_ request: Request) async throws -> (Account, clientID: String) {
        let credentials = Credentials(request: request)
        if let clientID = credentials.clientID {
            if let account = try await store.account(clientID: clientID) {
                return (account, clientID)
            }
            var error = APIError(.forbidden, "Invalid client_id")
            error.imgurStyle = true
            throw error
        }
        var error = APIError(.unauthorized, "Authentication required: send 'Authorization: Client-ID <id>'")
        if let token = credentials.token {
            switch try await store.lookup(token: token) {
            case .valid(let account): return (account, account.clientId)
            case .revoked: error = APIError.revokedToken
            case .unknown: break
            }
        }
        error.imgurStyle = true
        throw error
    }

    /// Bytes the namespace stores now: its files, and the images its members uploaded. The
    /// quota (`--quota`) is per namespace: a club shares its folder and its room.
    func usedBytes(namespace: Int64) async throws -> Int64 {
        try await store.usedBytes(namespace: namespace)
    }
}
