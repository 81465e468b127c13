import Foundation
import GRDB

/// A user of the server: the development account, or any other created later.
struct Account: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "account"
    var id: Int64?
    var name: String
    var appKey: String
    var appSecret: String
    var accessToken: String
    var clientId: String
    var quotaBytes: Int64
    var nextRevision: Int64
    var createdAt: Double

    enum CodingKeys: String, CodingKey {
        case id, name
        case appKey = "app_key", appSecret = "app_secret", accessToken = "access_token"
        case clientId = "client_id", quotaBytes = "quota_bytes"
        case nextRevision = "next_revision", createdAt = "created_at"
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// A file or folder in an account's Dropbox-style tree. `pathLower` is the key (paths are
/// case-insensitive); `pathDisplay` keeps the case the entry was created with.
struct Entry: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "entry"
    var id: Int64?
    var accountId: Int64
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

    enum CodingKeys: String, CodingKey {
        case id, bytes, revision, blob, sha256, modified
        case accountId = "account_id", pathLower = "path_lower", pathDisplay = "path_display"
        case parentLower = "parent_lower", isDir = "is_dir", mimeType = "mime_type"
    }

    enum Columns {
        static let accountId = Column(CodingKeys.accountId)
        static let pathLower = Column(CodingKeys.pathLower)
        static let parentLower = Column(CodingKeys.parentLower)
        static let isDir = Column(CodingKeys.isDir)
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// Dropbox's `rev`: an opaque string, here the revision in hex.
    var rev: String { String(revision, radix: 16) + "0bc" }
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
