import Foundation
import GRDB

/// A public record type stored in one table. The GRDB conformances live on ``Stored``, so
/// that FerryStore's public API does not expose GRDB.
protocol StoredRecord: Codable, Sendable {
    static var databaseTableName: String { get }
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
        try Stored<Self>.fetchAll(db, sql: sql, arguments: arguments).map(\.record)
    }

    static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try Stored<Self>.fetchOne(db, sql: sql, arguments: arguments)?.record
    }
}
