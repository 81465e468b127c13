import Foundation
import GRDB

/// The change journal behind `/1/delta` and `/1/longpoll_delta`: one row per path whose state
/// changed, numbered by a sequence per namespace, written in the transaction that changed the
/// entry. Delta answers with the entries' state now, so a path changed twice since a cursor is
/// listed once.
extension SQLiteStore: ChangeJournalStore {
    /// Migration v3: the journal, seeded with every existing entry, so a delta without a cursor
    /// (a reset) lists the whole tree from the journal alone.
    static func migrateToJournal(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE change_journal (
                namespace_id INTEGER NOT NULL REFERENCES namespace(id) ON DELETE CASCADE,
                sequence INTEGER NOT NULL,
                path_lower TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('put', 'delete', 'move', 'create_folder')),
                time DOUBLE NOT NULL,
                PRIMARY KEY (namespace_id, sequence)
            );
            ALTER TABLE namespace ADD COLUMN next_sequence INTEGER NOT NULL DEFAULT 1;
            INSERT INTO change_journal (namespace_id, sequence, path_lower, kind, time)
                SELECT namespace_id, ROW_NUMBER() OVER (PARTITION BY namespace_id ORDER BY path_lower), path_lower,
                       CASE WHEN is_dir THEN 'create_folder' ELSE 'put' END, modified
                FROM entry;
            UPDATE namespace SET next_sequence = 1 + (SELECT COUNT(*) FROM change_journal WHERE namespace_id = namespace.id);
            """)
    }

    /// Appends a journal row (inside the transaction that changed `path`).
    static func recordChange(_ db: Database, _ namespace: Int64, _ pathLower: String, _ kind: ChangeKind) throws {
        // The counter on the namespace row, not MAX(sequence)+1: the row's update serialises
        // writers on PostgreSQL too, where a later step puts two servers on one database.
        let sequence = try Int64.fetchOne(db, sql: "SELECT next_sequence FROM namespace WHERE id = ?", arguments: [namespace]) ?? 1
        try db.execute(sql: "UPDATE namespace SET next_sequence = next_sequence + 1 WHERE id = ?", arguments: [namespace])
        try db.execute(sql: "INSERT INTO change_journal (namespace_id, sequence, path_lower, kind, time) VALUES (?, ?, ?, ?, ?)",
                       arguments: [namespace, sequence, pathLower, kind.rawValue, Date().timeIntervalSince1970])
    }

    /// A change to a namespace's tree: `body` in one write transaction, then the namespace's
    /// long-poll waiters in this process are woken.
    func writeTree<T: Sendable>(_ namespace: Int64, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let result = try await pool.write(body)
        changes.notify(namespace: namespace)
        return result
    }

    func head(_ namespace: Int64) async throws -> Int64 {
        try await pool.read { db in try Self.head(db, namespace) }
    }

    static func head(_ db: Database, _ namespace: Int64) throws -> Int64 {
        (try Int64.fetchOne(db, sql: "SELECT next_sequence FROM namespace WHERE id = ?", arguments: [namespace]) ?? 1) - 1
    }

    /// Paths in order, so that a folder comes before what is in it.
    func delta(_ namespace: Int64, after: Int64, prefix: DropboxPath, limit: Int) async throws -> DeltaPage {
        try await pool.read { db in
            let head = try Self.head(db, namespace)
            var sql = "SELECT sequence, path_lower FROM change_journal WHERE namespace_id = ? AND sequence > ?"
            var arguments: StatementArguments = [namespace, after]
            if !prefix.isRoot {
                sql += " AND (path_lower = ? OR substr(path_lower, 1, ?) = ?)"
                arguments += [prefix.lower, prefix.lower.count + 1, prefix.lower + "/"]
            }
            sql += " ORDER BY sequence LIMIT ?"
            arguments += [limit + 1]
            let rows = try Row.fetchAll(db, sql: sql, arguments: arguments).map { ($0["sequence"] as Int64, $0["path_lower"] as String) }
            let hasMore = rows.count > limit
            let page = rows.prefix(limit)
            var entries: [DeltaPage.Item] = []
            for path in Set(page.map(\.1)).sorted() {
                let entry = try Entry.filter(Entry.Columns.namespaceId == namespace && Entry.Columns.pathLower == path).fetchOne(db)
                entries.append(DeltaPage.Item(pathLower: path, entry: entry))
            }
            return DeltaPage(items: entries, cursor: hasMore ? page.last!.0 : head, hasMore: hasMore)
        }
    }
}
