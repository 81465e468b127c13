import Foundation
import Logging
import PostgresNIO

/// The file tree and its change journal in PostgreSQL: ``TreeRules`` decide, as for SQLite;
/// this file reads and writes the rows. Paths compare byte-wise (`COLLATE "C"`), as SQLite's.
extension PostgresStore: FileTreeStore, ChangeJournalStore {
    func entry(_ namespace: Int64, _ path: DropboxPath) async throws -> Entry? {
        try await read { connection in try await fetch(connection, namespace, path.lower) }
    }

    func children(_ namespace: Int64, _ path: DropboxPath) async throws -> [Entry] {
        try await entries("""
            SELECT * FROM entry WHERE namespace_id = \(namespace) AND parent_lower = \(path.lower) ORDER BY path_lower COLLATE "C"
            """)
    }

    func search(_ namespace: Int64, under path: DropboxPath, query: String, limit: Int) async throws -> [Entry] {
        let prefix = path.isRoot ? "/" : path.lower + "/"
        let words = TreeRules.searchWords(query)
        let under = try await entries("""
            SELECT * FROM entry WHERE namespace_id = \(namespace) AND starts_with(path_lower, \(prefix)) ORDER BY path_lower COLLATE "C"
            """)
        return Array(under.lazy.filter { TreeRules.nameMatches($0, words) }.prefix(limit))
    }

    func files(_ namespace: Int64, limit: Int) async throws -> [Entry] {
        try await entries("""
            SELECT * FROM entry WHERE namespace_id = \(namespace) AND NOT is_dir ORDER BY path_lower COLLATE "C" LIMIT \(limit)
            """)
    }

    func usedBytes(namespace: Int64) async throws -> Int64 {
        try await read { connection in try await usedBytes(connection, namespace) }
    }

    func putFile(author: Account, path: DropboxPath, blob: String, bytes: Int64, mode: WriteMode, quota: Int64) async throws -> (Entry, replaced: String?) {
        try TreeRules.checkPut(path, mode)
        let namespace = author.namespaceId
        return try await writeTree(namespace) { connection in
            try await ensureFolders(connection, author: author, path.parent)
            var target = path
            var existing: Entry? = nil
            if let current = try await fetch(connection, namespace, path.lower) {
                // The names taken beside it, read once: a conflicted copy goes in the same folder.
                let taken = Set(try await connection.rows("""
                    SELECT path_lower FROM entry WHERE namespace_id = \(namespace) AND parent_lower = \(path.parent.lower)
                    """, logger).map { try $0.get("path_lower", String.self) })
                (target, existing) = try TreeRules.target(for: path, current: current, mode: mode, author: author.name) {
                    taken.contains($0.lower)
                }
            }
            let used = try await usedBytes(connection, namespace)
            if used - (existing?.bytes ?? 0) + bytes > quota { throw APIError.overQuota }
            var entry = Entry.file(at: target, replacing: existing, namespace: namespace, bytes: bytes, blob: blob,
                                   revision: try await nextRevision(connection, namespace), author: author)
            try await save(connection, &entry)
            try await recordChange(connection, namespace, entry.pathLower, .put)
            return (entry, existing?.blob)
        }
    }

    func createFolder(author: Account, path: DropboxPath) async throws -> Entry {
        guard !path.isRoot else { throw APIError(.forbidden, "The root folder already exists") }
        let namespace = author.namespaceId
        return try await writeTree(namespace) { connection in
            if let existing = try await fetch(connection, namespace, path.lower) { throw TreeRules.alreadyExists(existing) }
            try await ensureFolders(connection, author: author, path)
            return try await fetch(connection, namespace, path.lower)!
        }
    }

    func delete(author: Account, path: DropboxPath) async throws -> (Entry, blobs: [String]) {
        guard !path.isRoot else { throw APIError(.forbidden, "The root folder cannot be deleted") }
        let namespace = author.namespaceId
        return try await writeTree(namespace) { connection in
            guard let entry = try await fetch(connection, namespace, path.lower) else { throw APIError.notFound(path.display) }
            let gone = try await connection.rows("""
                DELETE FROM entry WHERE namespace_id = \(namespace) AND (path_lower = \(path.lower) OR starts_with(path_lower, \(path.lower + "/")))
                RETURNING path_lower, blob
                """, logger).map { (try $0.get("path_lower", String.self), try $0.get("blob", String?.self)) }
            // A journal row for every path under a deleted folder, as SQLite's store writes.
            for (pathLower, _) in gone.sorted(by: { $0.0 < $1.0 }) { try await recordChange(connection, namespace, pathLower, .delete) }
            return (entry, gone.compactMap(\.1))
        }
    }

    func move(author: Account, from: DropboxPath, to: DropboxPath) async throws -> Entry {
        try TreeRules.checkMove(from: from, to: to)
        let namespace = author.namespaceId
        return try await writeTree(namespace) { connection in
            guard try await fetch(connection, namespace, from.lower) != nil else { throw APIError.notFound(from.display) }
            if to.lower != from.lower, let existing = try await fetch(connection, namespace, to.lower) { throw TreeRules.alreadyExists(existing) }
            try await ensureFolders(connection, author: author, to.parent)
            let moving = try await connection.rows("""
                SELECT * FROM entry WHERE namespace_id = \(namespace) AND (path_lower = \(from.lower) OR starts_with(path_lower, \(from.lower + "/")))
                ORDER BY path_lower COLLATE "C"
                """, logger).map(Entry.init)
            let revision = try await nextRevision(connection, namespace)
            for entry in moving {
                try await recordChange(connection, namespace, entry.pathLower, .move)
                var moved = try entry.moved(from: from, to: to, revision: revision, author: author)
                try await save(connection, &moved)
                try await recordChange(connection, namespace, moved.pathLower, .move)
            }
            return try await fetch(connection, namespace, to.lower)!
        }
    }

    // MARK: The journal

    func head(_ namespace: Int64) async throws -> Int64 {
        try await read { connection in try await head(connection, namespace) }
    }

    func delta(_ namespace: Int64, after: Int64, prefix: DropboxPath, limit: Int) async throws -> DeltaPage {
        try await read { connection in
            let head = try await head(connection, namespace)
            var query: PostgresQuery = "SELECT sequence, path_lower FROM change_journal WHERE namespace_id = \(namespace) AND sequence > \(after)"
            if !prefix.isRoot {
                query = """
                    SELECT sequence, path_lower FROM change_journal WHERE namespace_id = \(namespace) AND sequence > \(after)
                    AND (path_lower = \(prefix.lower) OR starts_with(path_lower, \(prefix.lower + "/")))
                    """
            }
            query.sql += " ORDER BY sequence LIMIT \(limit + 1)"
            let rows = try await connection.rows(query, logger).map { (try $0.get("sequence", Int64.self), try $0.get("path_lower", String.self)) }
            let hasMore = rows.count > limit
            let page = rows.prefix(limit)
            var items: [DeltaPage.Item] = []
            for path in Set(page.map(\.1)).sorted() {
                items.append(DeltaPage.Item(pathLower: path, entry: try await fetch(connection, namespace, path)))
            }
            return DeltaPage(items: items, cursor: hasMore ? page.last!.0 : head, hasMore: hasMore)
        }
    }

    // MARK: Inside a transaction

    /// A tree write: the namespace's row locked first (its counters are next), `body`, commit,
    /// then this process's long-poll waiters are woken (other instances' re-read the journal).
    func writeTree<T: Sendable>(_ namespace: Int64, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        let result = try await transaction { connection in
            try await connection.run("SELECT id FROM namespace WHERE id = \(namespace) FOR UPDATE", logger)
            return try await body(connection)
        }
        changes.notify(namespace: namespace)
        return result
    }

    private func entries(_ query: PostgresQuery) async throws -> [Entry] {
        try await read { connection in try await connection.rows(query, logger).map(Entry.init) }
    }

    func fetch(_ connection: PostgresConnection, _ namespace: Int64, _ pathLower: String) async throws -> Entry? {
        try await connection.row("SELECT * FROM entry WHERE namespace_id = \(namespace) AND path_lower = \(pathLower)", logger).map(Entry.init)
    }

    private func head(_ connection: PostgresConnection, _ namespace: Int64) async throws -> Int64 {
        (try await connection.row("SELECT next_sequence FROM namespace WHERE id = \(namespace)", logger)?.get("next_sequence", Int64.self) ?? 1) - 1
    }

    private func usedBytes(_ connection: PostgresConnection, _ namespace: Int64) async throws -> Int64 {
        try await connection.row("""
            SELECT (SELECT COALESCE(SUM(bytes), 0) FROM entry WHERE namespace_id = \(namespace))::BIGINT
                 + (SELECT COALESCE(SUM(bytes), 0) FROM image WHERE account_id IN (SELECT id FROM account WHERE namespace_id = \(namespace)))::BIGINT
                 AS used
            """, logger)?.get("used", Int64.self) ?? 0
    }

    /// Revisions count per namespace (the counter on its locked row).
    private func nextRevision(_ connection: PostgresConnection, _ namespace: Int64) async throws -> Int64 {
        try await connection.row(
            "UPDATE namespace SET next_revision = next_revision + 1 WHERE id = \(namespace) RETURNING next_revision - 1 AS revision",
            logger)?.get("revision", Int64.self) ?? 1
    }

    private func recordChange(_ connection: PostgresConnection, _ namespace: Int64, _ pathLower: String, _ kind: ChangeKind) async throws {
        try await connection.run("""
            WITH counter AS (UPDATE namespace SET next_sequence = next_sequence + 1 WHERE id = \(namespace) RETURNING next_sequence - 1 AS sequence)
            INSERT INTO change_journal (namespace_id, sequence, path_lower, kind, time)
            SELECT \(namespace), sequence, \(pathLower), \(kind.rawValue), \(Date().timeIntervalSince1970) FROM counter
            """, logger)
    }

    /// Inserts `entry` (setting its id) or updates the row of its id.
    private func save(_ connection: PostgresConnection, _ entry: inout Entry) async throws {
        if let id = entry.id {
            try await connection.run("""
                UPDATE entry SET path_lower = \(entry.pathLower), path_display = \(entry.pathDisplay), parent_lower = \(entry.parentLower),
                    is_dir = \(entry.isDir), bytes = \(entry.bytes), revision = \(entry.revision), blob = \(entry.blob), sha256 = \(entry.sha256),
                    mime_type = \(entry.mimeType), modified = \(entry.modified), modifier_id = \(entry.modifierId), modifier_name = \(entry.modifierName)
                WHERE id = \(id)
                """, logger)
        } else {
            entry.id = try await connection.row("""
                INSERT INTO entry (namespace_id, path_lower, path_display, parent_lower, is_dir, bytes, revision, blob, sha256, mime_type,
                                   modified, modifier_id, modifier_name)
                VALUES (\(entry.namespaceId), \(entry.pathLower), \(entry.pathDisplay), \(entry.parentLower), \(entry.isDir), \(entry.bytes),
                        \(entry.revision), \(entry.blob), \(entry.sha256), \(entry.mimeType), \(entry.modified), \(entry.modifierId),
                        \(entry.modifierName))
                RETURNING id
                """, logger)?.get("id", Int64.self)
        }
    }

    /// Creates `path` and its missing ancestors as folders; 409 if one of them is a file.
    private func ensureFolders(_ connection: PostgresConnection, author: Account, _ path: DropboxPath) async throws {
        let namespace = author.namespaceId
        for folder in TreeRules.folders(path) {
            if let existing = try await fetch(connection, namespace, folder.lower) {
                guard existing.isDir else { throw TreeRules.notAFolder(existing) }
                continue
            }
            var entry = Entry.folder(at: folder, namespace: namespace, revision: try await nextRevision(connection, namespace), author: author)
            try await save(connection, &entry)
            try await recordChange(connection, namespace, entry.pathLower, .createFolder)
        }
    }
}
