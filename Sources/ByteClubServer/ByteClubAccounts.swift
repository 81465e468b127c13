public import Foundation
public import Logging

/// The accounts of a byteclub-server, for `byteclub-server accounts …`: add a member to the
/// club, list the accounts, revoke an account's tokens, issue a fresh token.
///
/// It opens the same database as the running servers (the data directory's SQLite file, or the
/// PostgreSQL database they share), which see each change on their next request: tokens are
/// looked up per request, never cached.
///
/// ```swift
/// let accounts = try await ByteClubAccounts(dataDirectory: "/srv/byteclub", createIfMissing: true)
/// // or: try await ByteClubAccounts(databaseURL: "postgres://byteclub@db.internal/byteclub")
/// let alice = try await accounts.add(name: "alice")
/// print(alice.accessToken)
/// try await accounts.revoke(name: "alice")    // her requests now get 401 "…revoked…"
/// await accounts.close()
/// ```
public struct ByteClubAccounts: Sendable {
    let store: any MetadataStore

    /// Opens the data directory's SQLite database. Without `createIfMissing`, a directory that
    /// holds no database yet is an error (a mistyped `--data-dir` is not silently made anew).
    public init(dataDirectory: String, createIfMissing: Bool = false) async throws {
        store = try await StoreLocation.dataDirectory(dataDirectory, createIfMissing: createIfMissing)
            .open(logger: Logger(label: "byteclub-accounts"))
    }

    /// Opens (and migrates, if it is new) the PostgreSQL database at `databaseURL`
    /// (`postgres://user:password@host:port/database`), with one pooled connection.
    public init(databaseURL: String, logger: Logger = Logger(label: "byteclub-accounts")) async throws {
        store = try await StoreLocation.postgres(try DatabaseURL(databaseURL), poolSize: 1).open(logger: logger)
    }

    /// Creates a member of the club (the development account's shared folder, created first if
    /// needed) with a new access token, printed once: only its SHA-256 is kept.
    public func add(name: String) async throws -> Credentials {
        let (account, token) = try await store.addMember(name: name)
        return Credentials(name: account.name, appKey: account.appKey, appSecret: account.appSecret,
                           accessToken: token, clientID: account.clientId)
    }

    /// Every account, oldest first, with how many of its tokens are valid and revoked.
    public func list() async throws -> [AccountSummary] {
        try await store.accountSummaries()
    }

    /// Revokes every valid token of the account; returns how many there were.
    @discardableResult
    public func revoke(name: String) async throws -> Int {
        try await store.revokeTokens(name: name)
    }

    /// Issues one more token for the account and returns it (shown once, stored as a digest).
    public func issueToken(name: String) async throws -> String {
        try await store.issueToken(name: name)
    }

    /// Closes the database connection.
    public func close() async {
        await store.close()
    }

    /// What a member needs to sign in: the club's app key and secret, its token and Client-ID.
    public struct Credentials: Sendable, Equatable {
        /// The account's name (metadata's `modifier.display_name`).
        public var name: String
        /// Dropbox-style app key (`oauth_consumer_key`), the same for every member of the club.
        public var appKey: String
        /// Dropbox-style app secret.
        public var appSecret: String
        /// Bearer token for the files API.
        public var accessToken: String
        /// `Client-ID` for the images API (the account's own).
        public var clientID: String
    }
}

/// One line of `byteclub-server accounts list`: never a token.
public struct AccountSummary: Sendable, Equatable {
    /// The account's name.
    public var name: String
    /// When it was created.
    public var created: Date
    /// The name of the namespace (shared folder) it belongs to; `club` for the development
    /// account's and its members'.
    public var namespace: String
    /// Tokens that sign in.
    public var activeTokens: Int
    /// Tokens revoked (a request with one gets 401 saying so).
    public var revokedTokens: Int
    /// Whether this is the development account (`dev`).
    public var isDevelopment: Bool
}

/// A refused account operation (unknown name, a name taken, a name not allowed), with a
/// message for the command line.
public struct AccountError: Error, CustomStringConvertible, Sendable {
    /// What was wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}
