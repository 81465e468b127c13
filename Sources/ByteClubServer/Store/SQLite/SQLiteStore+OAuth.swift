import Foundation
import GRDB

/// Migration v4 (released: never edit it) and ``OAuthStore`` in SQLite. Taking a consent and
/// redeeming a code are each one write transaction: SQLite's single writer makes them work once.
extension SQLiteStore: OAuthStore {
    static func migrateToOAuth(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE oauth_client (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                created_at DOUBLE NOT NULL
            );
            CREATE TABLE oauth_redirect_uri (
                client_id TEXT NOT NULL REFERENCES oauth_client(id) ON DELETE CASCADE,
                uri TEXT NOT NULL,
                PRIMARY KEY (client_id, uri)
            );
            CREATE TABLE oauth_consent (
                token_sha256 TEXT PRIMARY KEY,
                account_id INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                client_id TEXT NOT NULL REFERENCES oauth_client(id) ON DELETE CASCADE,
                redirect_uri TEXT NOT NULL,
                state TEXT,
                code_challenge TEXT NOT NULL,
                expires_at DOUBLE NOT NULL
            );
            CREATE TABLE oauth_code (
                code_sha256 TEXT PRIMARY KEY,
                account_id INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                client_id TEXT NOT NULL REFERENCES oauth_client(id) ON DELETE CASCADE,
                redirect_uri TEXT NOT NULL,
                code_challenge TEXT NOT NULL,
                created_at DOUBLE NOT NULL,
                expires_at DOUBLE NOT NULL,
                used_at DOUBLE,
                access_token_id INTEGER REFERENCES access_token(id) ON DELETE SET NULL
            );
            """)
        try db.execute(sql: "INSERT INTO oauth_client (id, name, created_at) VALUES (?, 'Byte Club', ?)",
                       arguments: [OAuthRules.byteClubClientID, Date().timeIntervalSince1970])
        for uri in OAuthRules.byteClubRedirects {
            try db.execute(sql: "INSERT INTO oauth_redirect_uri (client_id, uri) VALUES (?, ?)", arguments: [OAuthRules.byteClubClientID, uri])
        }
    }

    // MARK: Clients

    func oauthClient(_ id: String) async throws -> OAuthClient? {
        try await pool.read { db in try Self.oauthClient(db, id) }
    }

    static func oauthClient(_ db: Database, _ id: String) throws -> OAuthClient? {
        guard let row = try Row.fetchOne(db, sql: "SELECT id, name, created_at FROM oauth_client WHERE id = ?", arguments: [id]) else {
            return nil
        }
        let uris = try String.fetchAll(db, sql: "SELECT uri FROM oauth_redirect_uri WHERE client_id = ? ORDER BY uri", arguments: [id])
        return OAuthClient(id: row["id"], name: row["name"], redirectURIs: uris, created: Date(timeIntervalSince1970: row["created_at"]))
    }

    func addClient(id: String, name: String, redirectURIs: [String]) async throws -> OAuthClient {
        try await pool.write { db in
            if try Self.oauthClient(db, id) == nil {
                try db.execute(sql: "INSERT INTO oauth_client (id, name, created_at) VALUES (?, ?, ?)",
                               arguments: [id, name, Date().timeIntervalSince1970])
            }
            for uri in redirectURIs {
                try db.execute(sql: "INSERT OR IGNORE INTO oauth_redirect_uri (client_id, uri) VALUES (?, ?)", arguments: [id, uri])
            }
            return try Self.oauthClient(db, id)!
        }
    }

    func oauthClients() async throws -> [OAuthClient] {
        try await pool.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM oauth_client ORDER BY created_at, id").compactMap { try Self.oauthClient(db, $0) }
        }
    }

    // MARK: Consents and codes

    func createConsent(_ request: AuthorizationRequest, account: Int64, lifetime: TimeInterval) async throws -> String {
        let token = ServerState.randomToken(16)
        let now = Date().timeIntervalSince1970
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM oauth_consent WHERE expires_at < ?", arguments: [now])
            try db.execute(sql: """
                INSERT INTO oauth_consent (token_sha256, account_id, client_id, redirect_uri, state, code_challenge, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [AccessToken.digest(token), account, request.clientID, request.redirectURI, request.state,
                                 request.codeChallenge, now + lifetime])
        }
        return token
    }

    func takeConsent(token: String, account: Int64) async throws -> AuthorizationRequest? {
        try await pool.write { db in
            let digest = AccessToken.digest(token)
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM oauth_consent WHERE token_sha256 = ?", arguments: [digest]),
                  row["account_id"] as Int64 == account
            else { return nil }
            try db.execute(sql: "DELETE FROM oauth_consent WHERE token_sha256 = ?", arguments: [digest])
            guard row["expires_at"] as Double >= Date().timeIntervalSince1970 else { return nil }
            return AuthorizationRequest(clientID: row["client_id"], redirectURI: row["redirect_uri"], state: row["state"],
                                        codeChallenge: row["code_challenge"])
        }
    }

    func issueCode(for request: AuthorizationRequest, account: Int64, lifetime: TimeInterval) async throws -> String {
        let code = ServerState.randomToken(16)
        let now = Date().timeIntervalSince1970
        try await pool.write { db in
            // Codes long expired can no longer be replayed to any effect worth recording.
            try db.execute(sql: "DELETE FROM oauth_code WHERE expires_at < ?", arguments: [now - OAuthRules.expiredCodesKept])
            try db.execute(sql: """
                INSERT INTO oauth_code (code_sha256, account_id, client_id, redirect_uri, code_challenge, created_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [AccessToken.digest(code), account, request.clientID, request.redirectURI, request.codeChallenge,
                                 now, now + lifetime])
        }
        return code
    }

    func redeem(code: String, clientID: String, redirectURI: String, verifier: String) async throws -> Result<(Account, token: String), OAuthError> {
        try await pool.write { db in
            let digest = AccessToken.digest(code)
            let now = Date().timeIntervalSince1970
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM oauth_code WHERE code_sha256 = ?", arguments: [digest]) else {
                return .failure(OAuthRules.unknownCode)
            }
            let stored = StoredCode(
                accountID: row["account_id"], clientID: row["client_id"], redirectURI: row["redirect_uri"],
                codeChallenge: row["code_challenge"], expiresAt: row["expires_at"], usedAt: row["used_at"], accessTokenID: row["access_token_id"])
            if stored.usedAt != nil {
                if let tokenID = stored.accessTokenID {
                    try db.execute(sql: "UPDATE access_token SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", arguments: [now, tokenID])
                }
                return .failure(OAuthRules.reusedCode)
            }
            if let refusal = OAuthRules.refusal(stored, clientID: clientID, redirectURI: redirectURI, verifier: verifier, now: now) {
                return .failure(refusal)
            }
            guard let account = try Account.fetchOne(db, key: stored.accountID) else { return .failure(OAuthRules.accountGone) }
            let token = ServerState.randomToken(24)
            let tokenID = try Self.insertToken(db, token, account: account.id!, origin: AccessToken.Origin.oauth)
            try db.execute(sql: "UPDATE oauth_code SET used_at = ?, access_token_id = ? WHERE code_sha256 = ?", arguments: [now, tokenID, digest])
            return .success((account, token))
        }
    }
}
