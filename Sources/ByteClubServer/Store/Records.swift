import Foundation
import GRDB

/// A member of a club: the development account (named `dev`) or one added with
/// `byteclub-server accounts add`. Its files live in its namespace, which other members share;
/// its access tokens are rows of ``AccessToken``, stored as SHA-256 digests.
struct Account: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "account"
    /// The development account's name; there is one such account per data directory.
    static let developmentName = "dev"
    var id: Int64?
    var name: String
    var namespaceId: Int64
    var appKey: String
    var appSecret: String
    var clientId: String
    /// The development account's first token, kept in clear so that every start can print it;
    /// `nil` for members (their tokens are printed once, when issued).
    var devAccessToken: String?
    var createdAt: Double

    enum CodingKeys: String, CodingKey {
        case id, name
        case namespaceId = "namespace_id", appKey = "app_key", appSecret = "app_secret"
        case clientId = "client_id", devAccessToken = "dev_access_token", createdAt = "created_at"
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    var isDevelopment: Bool { name == Self.developmentName }
}

/// One access token of an account: only its SHA-256 is stored. Revoked tokens stay (with
/// `revoked_at`) so that a request with one is told so instead of "unknown token".
struct AccessToken: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "access_token"
    var id: Int64?
    var accountId: Int64
    var tokenSha256: String
    /// Who issued it: `development` (the dev account's first), `admin` (the CLI), `oauth` (`/oauth2/token`).
    var origin: String
    var createdAt: Double
    var revokedAt: Double?

    enum CodingKeys: String, CodingKey {
        case id, origin
        case accountId = "account_id", tokenSha256 = "token_sha256", createdAt = "created_at", revokedAt = "revoked_at"
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// A file or folder in a namespace's Dropbox-style tree (shared by the namespace's members).
/// `pathLower` is the key (paths are case-insensitive); `pathDisplay` keeps the case the entry
/// was created with; the modifier is the member who last wrote it.
struct Entry: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "entry"
    var id: Int64?
    var namespaceId: Int64
    var pathLower: String
    var pathDisplay: String
    var parentLower: String
    var isDir: Bool
    var bytes: Int64
    var revision: Int64
    var blob: String?
    var sha256: String?
    var mimeType: String?
    var modified: Double
    /// The account that last wrote the entry (`nil` once that account is gone), and its name
    /// then, shown as Dropbox's `modifier`.
    var modifierId: Int64?
    var modifierName: String?

    enum CodingKeys: String, CodingKey {
        case id, bytes, revision, blob, sha256, modified
        case namespaceId = "namespace_id", pathLower = "path_lower", pathDisplay = "path_display"
        case parentLower = "parent_lower", isDir = "is_dir", mimeType = "mime_type"
        case modifierId = "modifier_id", modifierName = "modifier_name"
    }

    enum Columns {
        static let namespaceId = Column(CodingKeys.namespaceId)
        static let pathLower = Column(CodingKeys.pathLower)
        static let parentLower = Column(CodingKeys.parentLower)
        static let isDir = Column(CodingKeys.isDir)
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// Dropbox's `rev`: an opaque string, here the revision in hex.
    var rev: String { Self.rev(revision) }

    static func rev(_ revision: Int64) -> String { String(revision, radix: 16) + "0bc" }

    /// The revision a `rev` names, or `nil` when it is not one this server writes.
    static func revision(fromRev rev: String) -> Int64? {
        guard rev.hasSuffix("0bc"), let revision = Int64(rev.dropLast(3), radix: 16), revision > 0, Self.rev(revision) == rev else { return nil }
        return revision
    }
}

/// An image uploaded through the Imgur-style API.
struct ImageRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "image"
    var id: String
    var accountId: Int64
    var deletehash: String
    var title: String?
    var description: String?
    var mimeType: String
    var width: Int
    var height: Int
    var bytes: Int64
    var datetime: Int64
    var blob: String

    enum CodingKeys: String, CodingKey {
        case id, deletehash, title, description, width, height, bytes, datetime, blob
        case accountId = "account_id", mimeType = "mime_type"
    }
}

/// A request recorded by a request bin.
struct BinRequest: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "bin_request"
    var id: Int64?
    var binId: String
    var method: String
    var path: String
    var query: String?
    var headers: String
    var body: Data?
    var bodyBytes: Int64
    var truncated: Bool
    var remoteAddr: String?
    var time: Double

    enum CodingKeys: String, CodingKey {
        case id, method, path, query, headers, body, truncated, time
        case binId = "bin_id", bodyBytes = "body_bytes", remoteAddr = "remote_addr"
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
