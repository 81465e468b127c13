import Foundation
import GRDB

/// A public record type stored in one table. The GRDB conformances live on ``Stored``, so
/// that FerryStore's public API does not expose GRDB.
protocol StoredRecord: Codable, Sendable {
    static var databaseTableName: String { get }
    /// The columns that name a row in messages (its primary key).
    static var identityColumns: [String] { get }
}

/// One row of `Record`'s table: GRDB reads and writes it through `Record`'s own `Codable`,
/// with dates stored as seconds since 1970 (so SQL can compare them).
struct Stored<Record: StoredRecord>: FetchableRecord, PersistableRecord, Codable, Sendable {
    var record: Record

    init(_ record: Record) { self.record = record }

    static var databaseTableName: String { Record.databaseTableName }
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }

    /// JSON columns (headers): compact, keys sorted, slashes as they are.
    static func databaseJSONEncoder(for column: String) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.dataEncodingStrategy = .base64
        encoder.nonConformingFloatEncodingStrategy = .throw
        return encoder
    }

    init(from decoder: any Decoder) throws { record = try Record(from: decoder) }
    func encode(to encoder: any Encoder) throws { try record.encode(to: encoder) }
}

extension StoredRecord {
    static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try Row.fetchAll(db, sql: sql, arguments: arguments).map(read)
    }

    static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try Row.fetchOne(db, sql: sql, arguments: arguments).map(read)
    }

    /// One row as a record, explicitly: a row that cannot be read is an error naming the table,
    /// the row and the column, never a record with a guessed value.
    static func read(_ row: Row) throws -> Self {
        do {
            return try Stored<Self>(row: row).record
        } catch {
            let identity = identityColumns.map { "\($0) \(row[$0].map { "\($0)" } ?? "NULL")" }.joined(separator: ", ")
            throw FerryStoreError(.unreadableRow, "the \(databaseTableName) row (\(identity)) cannot be read: \(error)", underlying: error)
        }
    }
}
