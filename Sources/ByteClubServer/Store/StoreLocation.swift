import Foundation
import Logging

/// Where the metadata lives: the data directory's SQLite database (the default), or the
/// PostgreSQL database of `--database-url`, which several server instances may share.
enum StoreLocation: Sendable {
    case sqlite(path: String)
    case postgres(DatabaseURL, poolSize: Int)

    /// From the configuration: its ``ByteClubConfiguration/databaseURL`` if set, else SQLite.
    /// A URL that is not one is an error here, before anything is opened.
    init(_ configuration: ByteClubConfiguration) throws {
        if let url = configuration.databaseURL {
            self = .postgres(try DatabaseURL(url), poolSize: configuration.databasePoolSize)
        } else {
            self = .sqlite(path: configuration.dataDirectory + "/byteclub.sqlite")
        }
    }

    /// The SQLite database of a data directory, for the command-line tools. Without
    /// `createIfMissing`, a directory that holds no database yet is an error (a mistyped
    /// `--data-dir` is not silently made anew).
    static func dataDirectory(_ directory: String, createIfMissing: Bool) throws -> StoreLocation {
        let path = directory + "/byteclub.sqlite"
        if !FileManager.default.fileExists(atPath: path) {
            guard createIfMissing else {
                throw AccountError("No byteclub-server data in \(directory) (no byteclub.sqlite): start the server there first")
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        return .sqlite(path: path)
    }

    /// Opens (and migrates) the store. PostgreSQL: connects once first, so an unreachable
    /// server, a wrong password or a missing database is a ``DatabaseURLError`` saying which.
    func open(longPollWaiterLimit: Int = 1000, logger: Logger) async throws -> any MetadataStore {
        switch self {
        case .sqlite(let path):
            return try SQLiteStore(path: path, longPollWaiterLimit: longPollWaiterLimit)
        case .postgres(let url, let poolSize):
            return try await PostgresStore.open(url, poolSize: poolSize, longPollWaiterLimit: longPollWaiterLimit, logger: logger)
        }
    }
}
