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
