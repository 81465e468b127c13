import Crypto
import Foundation
import GRDB

extension AccessToken {
    /// Where a token came from, as stored in `origin`.
    enum Origin {
        /// The development account's first token (`--dev-access-token` or random).
        static let development = "development"
        /// Issued by `byteclub-server accounts add` or `accounts token`.
        static let admin = "admin"
        /// Issued at `/oauth2/token` for an authorization code (a member signing in in a browser).
        static let oauth = "oauth"
    }

    /// The stored form of a token: its SHA-256, in hex. Tokens are random (not passwords), so an
    /// unsalted digest is enough to keep a copy of the database from signing anyone in.
    static func digest(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// What a presented token turned out to be.
enum TokenLookup: Sendable {
    case valid(Account)
    case revoked
    case unknown
}

/// Accounts and tokens, for the server (each request looks its token up here, uncached, so a
/// revocation by another process counts at once) and for the `accounts` subcommands.
extension Store {
    func lookup(token: String) async throws -> TokenLookup {
        let digest = AccessToken.digest(token)
        return try await pool.read { db in
            guard let row = try AccessToken.filter(Column("token_sha256") == digest).fetchOne(db) else { return .unknown }
            if row.revokedAt != nil { return .revoked }
            guard let account = try Account.fetchOne(db, key: row.accountId) else { return .unknown }
            return .valid(account)
        }
    }

    /// The development account, created on first use with `wanted`'s credentials (random where
    /// `nil`) in a new namespace, "the club". Returns it, whether this call created it, and
    /// whether its first token (the one kept to print) is still valid.
    func ensureDevAccount(wanted: DevCredentials) throws -> (Account, created: Bool, tokenActive: Bool) {
        try pool.write { db in
            if let existing = try Account.filter(Column("name") == Account.developmentName).fetchOne(db) {
                let active = try existing.devAccessToken.map { token in
                    try AccessToken.filter(Column("token_sha256") == AccessToken.digest(token) && Column("revoked_at") == nil).fetchCount(db) > 0
                } ?? false
                return (existing, false, active)
            }
            let now = Date().timeIntervalSince1970
            try db.execute(sql: "INSERT INTO namespace (name, next_revision, created_at) VALUES ('club', 1, ?)", arguments: [now])
            let token = wanted.accessToken ?? ServerState.randomToken(24)
            let account = try Self.insertAccount(
                db, name: Account.developmentName, namespace: db.lastInsertedRowID,
                appKey: wanted.appKey ?? ServerState.randomToken(8), appSecret: ServerState.randomToken(8),
                clientID: wanted.clientID ?? ServerState.randomToken(8), devToken: token)
            try Self.insertToken(db, token, account: account.id!, origin: AccessToken.Origin.development)
            return (account, true, true)
        }
    }

    /// A new member of the club (the development account's namespace and app), with a fresh
    /// token and Client-ID. Creates the development account first if there is none yet.
    func addMember(name: String) throws -> (Account, token: String) {
        try AccountNames.check(name)
        let (dev, _, _) = try ensureDevAccount(wanted: DevCredentials())
        return try pool.write { db in
            if try Account.filter(Column("name") == name).fetchCount(db) > 0 {
                throw AccountError("An account named '\(name)' already exists")
            }
            let account = try Self.insertAccount(
                db, name: name, namespace: dev.namespaceId, appKey: dev.appKey, appSecret: dev.appSecret,
                clientID: ServerState.randomToken(8), devToken: nil)
            let token = ServerState.randomToken(24)
            try Self.insertToken(db, token, account: account.id!, origin: AccessToken.Origin.admin)
            return (account, token)
        }
    }

    /// A new token for `name` (its other tokens stay as they are).
    func issueToken(name: String) throws -> String {
        try pool.write { db in
            let account = try Self.account(db, named: name)
            let token = ServerState.randomToken(24)
            try Self.insertToken(db, token, account: account.id!, origin: AccessToken.Origin.admin)
            return token
        }
    }

    /// Revokes every valid token of `name`; returns how many.
    func revokeTokens(name: String) throws -> Int {
        try pool.write { db in
            let account = try Self.account(db, named: name)
            try db.execute(sql: "UPDATE access_token SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL",
                           arguments: [Date().timeIntervalSince1970, account.id])
            return db.changesCount
        }
    }

    /// Every account with its namespace's name and its tokens counted, oldest first.
    func accountSummaries() throws -> [AccountSummary] {
        try pool.read { db in
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

    static func insertAccount(_ db: Database, name: String, namespace: Int64, appKey: String, appSecret: String,
                              clientID: String, devToken: String?) throws -> Account {
        var account = Account(
            id: nil, name: name, namespaceId: namespace, appKey: appKey, appSecret: appSecret, clientId: clientID,
            devAccessToken: devToken, createdAt: Date().timeIntervalSince1970)
        try account.insert(db)
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

/// Which account names are accepted: they show in metadata (`modifier`) and in the names of
/// conflicted copies, so no slashes, spaces or control characters.
enum AccountNames {
    static func check(_ name: String) throws(AccountError) {
        guard (1...64).contains(name.count) else { throw AccountError("An account name has 1 to 64 characters") }
        guard !name.hasPrefix("-"), !name.hasPrefix("."),
              name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0) })
        else {
            throw AccountError("An account name has letters, digits, '.', '_' and '-' only, and does not start with '-' or '.'")
        }
    }
}
