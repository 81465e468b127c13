import Foundation
import Logging
import PostgresNIO

/// Accounts and tokens in PostgreSQL. Creating accounts takes an advisory lock, so that two
/// instances starting at once make one development account, not two.
extension PostgresStore: AccountStore {
    func lookup(token: String) async throws -> TokenLookup {
        let digest = AccessToken.digest(token)
        return try await read { connection in
            guard let row = try await connection.row(
                "SELECT account_id, revoked_at FROM access_token WHERE token_sha256 = \(digest)", logger) else { return .unknown }
            if try row.get("revoked_at", Double?.self) != nil { return .revoked }
            let id = try row.get("account_id", Int64.self)
            guard let account = try await connection.row("SELECT * FROM account WHERE id = \(id)", logger).map(Account.init) else { return .unknown }
            return .valid(account)
        }
    }

    func account(clientID: String) async throws -> Account? {
        try await read { connection in try await connection.row("SELECT * FROM account WHERE client_id = \(clientID)", logger).map(Account.init) }
    }

    func ensureDevAccount(wanted: DevCredentials) async throws -> (Account, created: Bool, tokenActive: Bool) {
        try await accountsTransaction { connection in
            if let existing = try await connection.row("SELECT * FROM account WHERE name = \(Account.developmentName)", logger).map(Account.init) {
                var active = false
                if let token = existing.devAccessToken {
                    active = try await connection.row("""
                        SELECT 1 AS one FROM access_token WHERE token_sha256 = \(AccessToken.digest(token)) AND revoked_at IS NULL
                        """, logger) != nil
                }
                return (existing, false, active)
            }
            let namespace = try await connection.row("""
                INSERT INTO namespace (name, next_revision, created_at) VALUES ('club', 1, \(Date().timeIntervalSince1970)) RETURNING id
                """, logger)!.get("id", Int64.self)
            return (try await insertAccount(connection, .development(wanted), namespace: namespace), true, true)
        }
    }

    func addMember(name: String) async throws -> (Account, token: String) {
        try AccountNames.check(name)
        let (dev, _, _) = try await ensureDevAccount(wanted: DevCredentials())
        return try await accountsTransaction { connection in
            if try await connection.row("SELECT 1 AS one FROM account WHERE name = \(name)", logger) != nil {
                throw AccountError("An account named '\(name)' already exists")
            }
            let member = NewAccount.member(name, of: dev)
            return (try await insertAccount(connection, member, namespace: dev.namespaceId), member.token)
        }
    }

    func issueToken(name: String) async throws -> String {
        try await transaction { connection in
            let account = try await account(connection, named: name)
            let token = ServerState.randomToken(24)
            try await insertToken(connection, token, account: account.id!, origin: AccessToken.Origin.admin)
            return token
        }
    }

    func revokeTokens(name: String) async throws -> Int {
        try await transaction { connection in
            let account = try await account(connection, named: name)
            return try await connection.rows("""
                UPDATE access_token SET revoked_at = \(Date().timeIntervalSince1970) WHERE account_id = \(account.id!) AND revoked_at IS NULL
                RETURNING id
                """, logger).count
        }
    }

    func accountSummaries() async throws -> [AccountSummary] {
        try await read { connection in
            try await connection.rows("""
                SELECT account.name, account.created_at, namespace.name AS namespace,
                       (SELECT COUNT(*) FROM access_token WHERE account_id = account.id AND revoked_at IS NULL) AS active,
                       (SELECT COUNT(*) FROM access_token WHERE account_id = account.id AND revoked_at IS NOT NULL) AS revoked
                FROM account JOIN namespace ON namespace.id = account.namespace_id ORDER BY account.id
                """, logger).map { row in
                let name = try row.get("name", String.self)
                return AccountSummary(
                    name: name, created: Date(timeIntervalSince1970: try row.get("created_at")), namespace: try row.get("namespace"),
                    activeTokens: try row.get("active", Int.self), revokedTokens: try row.get("revoked", Int.self),
                    isDevelopment: name == Account.developmentName)
            }
        }
    }

    // MARK: Inside a transaction

    private func accountsTransaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await transaction { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(\(PostgresSchema.accountsLock))", logger)
            return try await body(connection)
        }
    }

    private func account(_ connection: PostgresConnection, named name: String) async throws -> Account {
        guard let account = try await connection.row("SELECT * FROM account WHERE name = \(name)", logger).map(Account.init) else {
            throw AccountError("No account named '\(name)'")
        }
        return account
    }

    private func insertAccount(_ connection: PostgresConnection, _ new: NewAccount, namespace: Int64) async throws -> Account {
        let account = try await connection.row("""
            INSERT INTO account (name, namespace_id, app_key, app_secret, client_id, dev_access_token, created_at)
            VALUES (\(new.name), \(namespace), \(new.appKey), \(new.appSecret), \(new.clientID), \(new.devToken), \(Date().timeIntervalSince1970))
            RETURNING *
            """, logger).map(Account.init)!
        try await insertToken(connection, new.token, account: account.id!, origin: new.origin)
        return account
    }

    /// Stores `token`'s digest for `account`; returns the row's id.
    @discardableResult
    func insertToken(_ connection: PostgresConnection, _ token: String, account: Int64, origin: String) async throws -> Int64 {
        try await connection.row("""
            INSERT INTO access_token (account_id, token_sha256, origin, created_at)
            VALUES (\(account), \(AccessToken.digest(token)), \(origin), \(Date().timeIntervalSince1970))
            RETURNING id
            """, logger)!.get("id", Int64.self)
    }
}
