public import Foundation

/// The accounts of a data directory, for `byteclub-server accounts …`: add a member to the
/// club, list the accounts, revoke an account's tokens, issue a fresh token.
///
/// It opens the same SQLite database (WAL) as a running server, which sees each change on its
/// next request: tokens are looked up per request, never cached.
///
/// ```swift
/// let accounts = try ByteClubAccounts(dataDirectory: "/srv/byteclub", createIfMissing: true)
/// let alice = try accounts.add(name: "alice")
/// print(alice.accessToken)
/// try accounts.revoke(name: "alice")    // her requests now get 401 "…revoked…"
/// ```
public struct ByteClubAccounts: Sendable {
    let store: Store

    /// Opens the data directory's database. Without `createIfMissing`, a directory that holds
    /// no database yet is an error (a mistyped `--data-dir` is not silently made anew).
    public init(dataDirectory: String, createIfMissing: Bool = false) throws {
        store = try Store.open(dataDirectory: dataDirectory, createIfMissing: createIfMissing)
    }

    /// Creates a member of the club (the development account's shared folder, created first if
    /// needed) with a new access token, printed once: only its SHA-256 is kept.
    public func add(name: String) throws -> Credentials {
        let (account, token) = try store.addMember(name: name)
        return Credentials(name: account.name, appKey: account.appKey, appSecret: account.appSecret,
                           accessToken: token, clientID: account.clientId)
    }

    /// Every account, oldest first, with how many of its tokens are valid and revoked.
    public func list() throws -> [AccountSummary] {
        try store.accountSummaries()
    }

    /// Revokes every valid token of the account; returns how many there were.
    @discardableResult
    public func revoke(name: String) throws -> Int {
        try store.revokeTokens(name: name)
    }

    /// Issues one more token for the account and returns it (shown once, stored as a digest).
    public func issueToken(name: String) throws -> String {
        try store.issueToken(name: name)
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

extension Store {
    /// The database of a data directory, for the command-line tools. Without
    /// `createIfMissing`, a directory that holds no database yet is an error (a mistyped
    /// `--data-dir` is not silently made anew).
    static func open(dataDirectory: String, createIfMissing: Bool) throws -> Store {
        let path = dataDirectory + "/byteclub.sqlite"
        if !FileManager.default.fileExists(atPath: path) {
            guard createIfMissing else {
                throw AccountError("No byteclub-server data in \(dataDirectory) (no byteclub.sqlite): start the server there first")
            }
            try FileManager.default.createDirectory(
                atPath: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        return try Store(path: path)
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
