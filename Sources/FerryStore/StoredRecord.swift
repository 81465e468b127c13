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

extension Stored {
    /// Inserts the row through a statement compiled once per connection and column list.
    /// GRDB's `insert` compiles (and authorizes) its statement each time and asks for the row
    /// back; at thousands of submissions a second that was a tenth of ferryd's time.
    func insertWithCachedStatement(_ db: Database) throws {
        let values = try databaseDictionary.sorted { $0.key < $1.key }
        let columns = values.map { "\"\($0.key)\"" }.joined(separator: ", ")
        let marks = Array(repeating: "?", count: values.count).joined(separator: ", ")
        let statement = try db.cachedStatement(sql: "INSERT INTO \(Self.databaseTableName) (\(columns)) VALUES (\(marks))")
        try statement.execute(arguments: StatementArguments(values.map(\.value)))
    }
}

extension Stored {
    /// Updates the row (found by its identity columns) through a statement compiled once per
    /// connection; every column is written. GRDB's `update` compiles one each time.
    func updateWithCachedStatement(_ db: Database) throws {
        let values = try databaseDictionary.sorted { $0.key < $1.key }
        let identity = Set(Record.identityColumns)
        let changed = values.filter { !identity.contains($0.key) }
        let keys = Record.identityColumns.map { column in values.first { $0.key == column }?.value ?? .null }
        let assignments = changed.map { "\"\($0.key)\" = ?" }.joined(separator: ", ")
        let condition = Record.identityColumns.map { "\"\($0)\" = ?" }.joined(separator: " AND ")
        let statement = try db.cachedStatement(sql: "UPDATE \(Self.databaseTableName) SET \(assignments) WHERE \(condition)")
        try statement.execute(arguments: StatementArguments(changed.map(\.value) + keys))
    }
}

extension StoredRecord {
    // The store's SQL is a fixed set of strings: each is compiled once per connection (GRDB's
    // `fetchAll(db, sql:)` compiles and authorizes it on every call).
    static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map(read)
    }

    static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments).map(read)
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
