import Foundation
import Logging
import PostgresNIO

/// ``OAuthStore`` in PostgreSQL (schema step 2). Single use holds across instances: a consent is
/// taken by one `DELETE … RETURNING`, and a code is redeemed in a transaction that first locks
/// its row (`SELECT … FOR UPDATE`), so of two redemptions at once, on any instances, the second
/// waits for the first's commit and then sees the code used.
extension PostgresStore: OAuthStore {
    func oauthClient(_ id: String) async throws -> OAuthClient? {
        try await read { connection in try await oauthClient(connection, id) }
    }

    func addClient(id: String, name: String, redirectURIs: [String]) async throws -> OAuthClient {
        try await transaction { connection in
            try await connection.run("""
                INSERT INTO oauth_client (id, name, created_at) VALUES (\(id), \(name), \(Date().timeIntervalSince1970))
                ON CONFLICT (id) DO NOTHING
                """, logger)
            for uri in redirectURIs {
                try await connection.run("INSERT INTO oauth_redirect_uri (client_id, uri) VALUES (\(id), \(uri)) ON CONFLICT DO NOTHING", logger)
            }
            return try await oauthClient(connection, id)!
        }
    }

    func oauthClients() async throws -> [OAuthClient] {
        try await read { connection in
            var clients: [OAuthClient] = []
            for row in try await connection.rows("SELECT id FROM oauth_client ORDER BY created_at, id COLLATE \"C\"", logger) {
                if let client = try await oauthClient(connection, try row.get("id")) { clients.append(client) }
            }
            return clients
        }
    }

    // MARK: Consents and codes

    func createConsent(_ request: AuthorizationRequest, account: Int64, lifetime: TimeInterval) async throws -> String {
        let token = ServerState.randomToken(16)
        let now = Date().timeIntervalSince1970
        try await transaction { connection in
            try await connection.run("DELETE FROM oauth_consent WHERE expires_at < \(now)", logger)
            try await connection.run("""
                INSERT INTO oauth_consent (token_sha256, account_id, client_id, redirect_uri, state, code_challenge, expires_at)
                VALUES (\(AccessToken.digest(token)), \(account), \(request.clientID), \(request.redirectURI), \(request.state),
                        \(request.codeChallenge), \(now + lifetime))
                """, logger)
        }
        return token
    }

    func takeConsent(token: String, account: Int64) async throws -> AuthorizationRequest? {
        try await read { connection in
            // One statement: of two forms sent at once (to any instances), one gets the row.
            guard let row = try await connection.row("""
                DELETE FROM oauth_consent WHERE token_sha256 = \(AccessToken.digest(token)) AND account_id = \(account) RETURNING *
                """, logger),
                try row.get("expires_at", Double.self) >= Date().timeIntervalSince1970
            else { return nil }
            return AuthorizationRequest(clientID: try row.get("client_id"), redirectURI: try row.get("redirect_uri"),
                                        state: try row.get("state"), codeChallenge: try row.get("code_challenge"))
        }
    }

    func issueCode(for request: AuthorizationRequest, account: Int64, lifetime: TimeInterval) async throws -> String {
        let code = ServerState.randomToken(16)
        let now = Date().timeIntervalSince1970
        try await transaction { connection in
            try await connection.run("DELETE FROM oauth_code WHERE expires_at < \(now - OAuthRules.expiredCodesKept)", logger)
            try await connection.run("""
                INSERT INTO oauth_code (code_sha256, account_id, client_id, redirect_uri, code_challenge, created_at, expires_at)
                VALUES (\(AccessToken.digest(code)), \(account), \(request.clientID), \(request.redirectURI), \(request.codeChallenge),
                        \(now), \(now + lifetime))
                """, logger)
        }
        return code
    }

    func redeem(code: String, clientID: String, redirectURI: String, verifier: String) async throws -> Result<(Account, token: String), OAuthError> {
        let digest = AccessToken.digest(code)
        return try await transaction { connection in
            let now = Date().timeIntervalSince1970
            // The row lock: another redemption of this code waits here until this one commits.
            guard let row = try await connection.row("SELECT * FROM oauth_code WHERE code_sha256 = \(digest) FOR UPDATE", logger) else {
                return .failure(OAuthRules.unknownCode)
            }
            let stored = StoredCode(
                accountID: try row.get("account_id"), clientID: try row.get("client_id"), redirectURI: try row.get("redirect_uri"),
                codeChallenge: try row.get("code_challenge"), expiresAt: try row.get("expires_at"), usedAt: try row.get("used_at"),
                accessTokenID: try row.get("access_token_id"))
            if stored.usedAt != nil {
                if let tokenID = stored.accessTokenID {
                    try await connection.run("UPDATE access_token SET revoked_at = \(now) WHERE id = \(tokenID) AND revoked_at IS NULL", logger)
                }
                return .failure(OAuthRules.reusedCode)
            }
            if let refusal = OAuthRules.refusal(stored, clientID: clientID, redirectURI: redirectURI, verifier: verifier, now: now) {
                return .failure(refusal)
            }
            guard let account = try await connection.row("SELECT * FROM account WHERE id = \(stored.accountID)", logger).map(Account.init) else {
                return .failure(OAuthRules.accountGone)
            }
            let token = ServerState.randomToken(24)
            let tokenID = try await insertToken(connection, token, account: account.id!, origin: AccessToken.Origin.oauth)
            try await connection.run("UPDATE oauth_code SET used_at = \(now), access_token_id = \(tokenID) WHERE code_sha256 = \(digest)", logger)
            return .success((account, token))
        }
    }

    // MARK: Inside a connection

    private func oauthClient(_ connection: PostgresConnection, _ id: String) async throws -> OAuthClient? {
        guard let row = try await connection.row("SELECT id, name, created_at FROM oauth_client WHERE id = \(id)", logger) else { return nil }
        // Byte order ("C"), as SQLite sorts: the same list whichever database.
        let uris = try await connection.rows("SELECT uri FROM oauth_redirect_uri WHERE client_id = \(id) ORDER BY uri COLLATE \"C\"", logger)
            .map { try $0.get("uri", String.self) }
        return OAuthClient(id: try row.get("id"), name: try row.get("name"), redirectURIs: uris,
                           created: Date(timeIntervalSince1970: try row.get("created_at")))
    }
}
