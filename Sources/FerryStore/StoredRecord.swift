import Foundation
import GRDB
import Synchronization

/// A public record type stored in one table, mapped to its columns by hand in both
/// directions: no `Codable` between a record and its row. (GRDB's Codable records encoded a
/// task through a keyed container per column, a fifth of ferryd's time at thousands of
/// submissions a second.) Internal, so FerryStore's public API does not expose GRDB.
protocol StoredRecord: Sendable {
    /// The table, its columns in the order of ``columnValues()`` and ``init(row:)``, and the
    /// columns that name a row (its primary key).
    static var table: StoredTable { get }
    /// The record's value for each of `table.columns`, in order.
    func columnValues() throws -> [DatabaseValue]
    /// Reads a row selected with `table.selection` (the columns in order).
    init(row: inout RowReader) throws
}

/// A table's name and columns, the insert built from them once per type, and updates of the
/// columns a change touched.
struct StoredTable: Sendable {
    let name: String
    let columns: [String]
    let identityColumns: [String]
    /// `"col1", "col2", …`: what the store's queries select, in the order records read.
    let selection: String
    let insertSQL: String
    /// Where each identity column is in `columns`.
    private let identityIndices: [Int]
    private let otherIndices: [Int]

    init(_ name: String, columns: [String], identity: [String]) {
        self.name = name
        self.columns = columns
        self.identityColumns = identity
        identityIndices = identity.map { column in columns.firstIndex(of: column)! }
        otherIndices = columns.indices.filter { !identity.contains(columns[$0]) }
        selection = columns.map { "\"\($0)\"" }.joined(separator: ", ")
        let marks = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        insertSQL = "INSERT INTO \(name) (\(selection)) VALUES (\(marks))"
    }

    /// An update of only the columns whose values differ between `old` and `new` (both in
    /// `columns`' order), or nil when none does. SQLite then leaves alone the indexes of the
    /// columns not set (setting every column rewrites every index's entry).
    func changedUpdate(from old: [DatabaseValue], to new: [DatabaseValue]) -> (sql: String, arguments: StatementArguments)? {
        let changed = otherIndices.filter { old[$0] != new[$0] }
        guard !changed.isEmpty else { return nil }
        let assignments = changed.map { "\"\(columns[$0])\" = ?" }.joined(separator: ", ")
        let condition = identityColumns.map { "\"\($0)\" = ?" }.joined(separator: " AND ")
        return ("UPDATE \(name) SET \(assignments) WHERE \(condition)",
                StatementArguments(values: changed.map { new[$0] } + identityIndices.map { new[$0] }))
    }
}

extension StoredRecord {
    // Each statement is compiled once per connection (GRDB's `insert`, `update` and
    // `fetchAll(db, sql:)` compile, and authorize, every time).

    /// Inserts the record as a new row.
    func insert(_ db: Database) throws {
        try db.cachedStatement(sql: Self.table.insertSQL).execute(arguments: StatementArguments(values: try columnValues()))
    }

    /// Writes the columns that differ from `stored`, the row as it was read (its values in
    /// the table's column order); nothing when none does. Each set of columns is compiled
    /// once per connection.
    func update(_ db: Database, changedFrom stored: [DatabaseValue]) throws {
        guard let update = Self.table.changedUpdate(from: stored, to: try columnValues()) else { return }
        try db.cachedStatement(sql: update.sql).execute(arguments: update.arguments)
    }

    /// The record `SELECT <selection> FROM <table> <clauses>` finds, with the row's values as
    /// stored (for ``update(_:changedFrom:)``).
    static func fetchOneWithValues(_ db: Database, _ clauses: String, arguments: StatementArguments = []) throws -> (Self, [DatabaseValue])? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: select(clauses)), arguments: arguments) else { return nil }
        return (try read(row), Array(row.databaseValues))
    }

    /// The records `SELECT <selection> FROM <table> <clauses>` finds.
    static func fetchAll(_ db: Database, _ clauses: String, arguments: StatementArguments = []) throws -> [Self] {
        try Row.fetchAll(db.cachedStatement(sql: select(clauses)), arguments: arguments).map(read)
    }

    static func fetchOne(_ db: Database, _ clauses: String, arguments: StatementArguments = []) throws -> Self? {
        try Row.fetchOne(db.cachedStatement(sql: select(clauses)), arguments: arguments).map(read)
    }

    private static func select(_ clauses: String) -> String {
        "SELECT \(table.selection) FROM \(table.name) \(clauses)"
    }

    /// One row as a record, explicitly: a row that cannot be read is an error naming the table,
    /// the row and the column, never a record with a guessed value.
    static func read(_ row: Row) throws -> Self {
        var reader = RowReader(row, columns: table.columns)
        do {
            return try Self(row: &reader)
        } catch {
            let identity = table.identityColumns.map { column -> String in
                let value = table.columns.firstIndex(of: column).flatMap { row[$0] as (any DatabaseValueConvertible)? }
                return "\(column) \(value.map { "\($0)" } ?? "NULL")"
            }.joined(separator: ", ")
            throw FerryStoreError(.unreadableRow, "the \(table.name) row (\(identity)) cannot be read: \(error)", underlying: error)
        }
    }
}

/// Reads a row's columns one after the other, in the table's order; a value the record
/// cannot hold is an error naming its column.
struct RowReader {
    private let row: Row
    private let columns: [String]
    private var index = 0

    init(_ row: Row, columns: [String]) {
        self.row = row
        self.columns = columns
    }

    struct Unreadable: Error, CustomStringConvertible {
        var column: String
        var reason: String
        var description: String { "column \(column): \(reason)" }
    }

    private mutating func take() -> (value: DatabaseValue, column: String) {
        defer { index += 1 }
        return (row[index], columns[index])
    }

    mutating func optional<T: DatabaseValueConvertible>(_ type: T.Type = T.self) throws -> T? {
        let (value, column) = take()
        if value.isNull { return nil }
        guard let decoded = T.fromDatabaseValue(value) else {
            throw Unreadable(column: column, reason: "\(value) is not a \(T.self)")
        }
        return decoded
    }

    mutating func value<T: DatabaseValueConvertible>(_ type: T.Type = T.self) throws -> T {
        let column = columns[index]
        guard let decoded = try optional(T.self) else { throw Unreadable(column: column, reason: "NULL") }
        return decoded
    }

    /// A name stored as its raw value (a kind, a state).
    mutating func named<T: RawRepresentable>(_ type: T.Type = T.self) throws -> T where T.RawValue == String {
        let column = columns[index]
        guard let decoded = try optionalNamed(T.self) else { throw Unreadable(column: column, reason: "NULL") }
        return decoded
    }

    mutating func optionalNamed<T: RawRepresentable>(_ type: T.Type = T.self) throws -> T? where T.RawValue == String {
        let column = columns[index]
        guard let raw = try optional(String.self) else { return nil }
        guard let decoded = T(rawValue: raw) else { throw Unreadable(column: column, reason: "\"\(raw)\" is not a \(T.self)") }
        return decoded
    }

    /// A URL stored as its text.
    mutating func url() throws -> URL {
        let column = columns[index]
        let text = try value(String.self)
        guard let url = URL(string: text) else { throw Unreadable(column: column, reason: "\"\(text)\" is not a URL") }
        return url
    }

    /// A time stored as seconds since 1970 (so SQL can compare them).
    mutating func date() throws -> Date { Date(timeIntervalSince1970: try value(Double.self)) }

    mutating func optionalDate() throws -> Date? { try optional(Double.self).map(Date.init(timeIntervalSince1970:)) }

    /// A value stored as JSON text.
    mutating func json<T: Decodable & Sendable>(_ type: T.Type = T.self) throws -> T {
        let column = columns[index]
        guard let decoded = try optionalJSON(T.self) else { throw Unreadable(column: column, reason: "NULL") }
        return decoded
    }

    /// - Parameter remembered: false for a column that holds secrets (credentials): those are
    ///   decoded each time and kept nowhere else.
    mutating func optionalJSON<T: Decodable & Sendable>(_ type: T.Type = T.self, remembered: Bool = true) throws -> T? {
        let column = columns[index]
        guard let text = try optional(String.self) else { return nil }
        if remembered, let known = JSONColumn.decoded(T.self, text) { return known }
        do {
            let value = try JSONColumn.decoder.decode(T.self, from: Data(text.utf8))
            if remembered { JSONColumn.remember(value, text) }
            return value
        } catch {
            throw Unreadable(column: column, reason: "\(error)")
        }
    }
}

extension StatementArguments {
    /// Arguments from values already converted. (GRDB's `init(_:)` for a sequence maps it with
    /// a generic key path, which Swift builds anew at each call, looking its types up by name.)
    init(values: [DatabaseValue]) {
        self.init(values.map { $0 as (any DatabaseValueConvertible)? })
    }
}

/// How JSON columns are written: compact, keys sorted, slashes as they are; and the values
/// last read from them.
enum JSONColumn {
    /// One decoder for every read and one encoder for every write: they keep no state
    /// between calls.
    static let decoder = JSONDecoder()

    /// Values decoded from column texts, by type and text. The same texts come back all the
    /// time (a session's options on every attempt it starts, the same headers on many tasks),
    /// and `JSONDecoder` cost more than the rest of reading a row. Emptied when it holds
    /// `cacheLimit` values, so it stays small whatever the texts.
    private static let cache = Mutex<[CacheKey: any Sendable]>([:])
    static let cacheLimit = 512

    private struct CacheKey: Hashable {
        let type: ObjectIdentifier
        let text: String
    }

    /// How many values are remembered now.
    static var count: Int { cache.withLock { $0.count } }

    static func decoded<T: Sendable>(_ type: T.Type, _ text: String) -> T? {
        cache.withLock { $0[CacheKey(type: ObjectIdentifier(type), text: text)] } as? T
    }

    static func remember<T: Sendable>(_ value: T, _ text: String) {
        cache.withLock { cache in
            if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[CacheKey(type: ObjectIdentifier(T.self), text: text)] = value
        }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .throw
        return encoder
    }()

    static func text<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func value<T: Encodable>(_ value: T?) throws -> DatabaseValue {
        try value.map { try text($0).databaseValue } ?? .null
    }
}

extension Date {
    /// Seconds since 1970, as the store keeps times.
    var storedValue: DatabaseValue { timeIntervalSince1970.databaseValue }
}

extension Optional where Wrapped: DatabaseValueConvertible {
    var storedValue: DatabaseValue { self?.databaseValue ?? .null }
}
