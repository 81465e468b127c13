import Foundation
import GRDB

/// Accounts and tokens, for the server (each request looks its token up here, uncached, so a
/// revocation by another process counts at once) and for the `accounts` subcommands.
extension SQLiteStore: AccountStore {
    func lookup(token: String) async throws -> TokenLookup {
        let digest = AccessToken.digest(token)
        return try await pool.read { db in
            guard let row = try AccessToken.filter(Column("token_sha256") == digest).fetchOne(db) else { return .unknown }
            if row.revokedAt != nil { return .revoked }
            guard let account = try Account.fetchOne(db, key: row.accountId) else { return .unknown }
            return .valid(account)
        }
    }

    func account(clientID: String) async throws -> Account? {
        try await pool.read { db in try Account.filter(Column("client_id") == clientID).fetchOne(db) }
    }

    func ensureDevAccount(wanted: DevCredentials) async throws -> (Account, created: Bool, tokenActive: Bool) {
        try await pool.write { db in
            if let existing = try Account.filter(Column("name") == Account.developmentName).fetchOne(db) {
                let active = try existing.devAccessToken.map { token in
                    try AccessToken.filter(Column("token_sha256") == AccessToken.digest(token) && Column("revoked_at") == nil).fetchCount(db) > 0
                } ?? false
                return (existing, false, active)
            }
            let now = Date().timeIntervalSince1970
            try db.execute(sql: "INSERT INTO namespace (name, next_revision, created_at) VALUES ('club', 1, ?)", arguments: [now])
            let account = try Self.insertAccount(db, .development(wanted), namespace: db.lastInsertedRowID)
            return (account, true, true)
        }
    }

    func addMember(name: String) async throws -> (Account, token: String) {
        try AccountNames.check(name)
        let (dev, _, _) = try await ensureDevAccount(wanted: DevCredentials())
        return try await pool.write { db in
            if try Account.filter(Column("name") == name).fetchCount(db) > 0 {
                throw AccountError("An account named '\(name)' already exists")
            }
            let member = NewAccount.member(name, of: dev)
            let account = try Self.insertAccount(db, member, namespace: dev.namespaceId)
            let token = member.token
            return (account, token)
        }
    }

    func issueToken(name: String) async throws -> String {
        try await pool.write { db in
            let account = try Self.account(db, named: name)
            let token = ServerState.randomToken(24)
            try Self.insertToken(db, token, account: account.id!, origin: AccessToken.Origin.admin)
            return token
        }
    }

    func revokeTokens(name: String) async throws -> Int {
        try await pool.write { db in
            let account = try Self.account(db, named: name)
            try db.execute(sql: "UPDATE access_token SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL",
                           arguments: [Date().timeIntervalSince1970, account.id])
            return db.changesCount
        }
    }

    func accountSummaries() async throws -> [AccountSummary] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT account.name, account.created_at, namespace.name AS namespace,
                       (SELECT COUNT(*) FROM access_token WHERE account_id = account.id AND revoked_at IS NULL) AS active,
                       (SELECT COUNT(*) FROM access_token WHERE account_id = account.id AND revoked_at IS NOT NULL) AS revoked
                FROM account JOIN namespace ON namespace.id = account.namespace_id ORDER BY account.id
                """).map { row in
                AccountSummary(
                    name: row["name"], created: Date(timeIntervalSince1970: row["created_at"]), namespace: row["namespace"],
                    activeTokens: row["active"], revokedTokens: row["revoked"], isDevelopment: row["name"] == Account.developmentName)
            }
        }
    }

    // MARK: Inside a transaction

    static func account(_ db: Database, named name: String) throws -> Account {
        guard let account = try Account.filter(Column("name") == name).fetchOne(db) else {
            throw AccountError("No account named '\(name)'")
        }
        return account
    }

    /// Inserts `new` in `namespace` with its token.
    static func insertAccount(_ db: Database, _ new: NewAccount, namespace: Int64) throws -> Account {
        var account = Account(
            id: nil, name: new.name, namespaceId: namespace, appKey: new.appKey, appSecret: new.appSecret, clientId: new.clientID,
            devAccessToken: new.devToken, createdAt: Date().timeIntervalSince1970)
        try account.insert(db)
        try insertToken(db, new.token, account: account.id!, origin: new.origin)
        return account
    }

    /// Stores `token`'s digest for `account`; returns the row's id.
    @discardableResult
    static func insertToken(_ db: Database, _ token: String, account: Int64, origin: String) throws -> Int64 {
        var row = AccessToken(id: nil, accountId: account, tokenSha256: AccessToken.digest(token), origin: origin,
                              createdAt: Date().timeIntervalSince1970, revokedAt: nil)
        try row.insert(db)
        return row.id!
    }
}
