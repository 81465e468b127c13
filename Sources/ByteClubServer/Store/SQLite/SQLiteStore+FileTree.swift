import Foundation
import GRDB

/// A namespace's tree of entries, shared by its members: every change is one write
/// transaction, so a crash leaves either the old tree or the new one. Reads take the
/// namespace; writes take the member writing (its namespace, and the entries' `modifier`).
extension SQLiteStore: FileTreeStore {
    func entry(_ namespace: Int64, _ path: DropboxPath) async throws -> Entry? {
        try await pool.read { db in try Self.fetch(db, namespace, path) }
    }

    func children(_ namespace: Int64, _ path: DropboxPath) async throws -> [Entry] {
        let key = path.lower
        return try await pool.read { db in
            try Entry.filter(Entry.Columns.namespaceId == namespace && Entry.Columns.parentLower == key)
                .order(Entry.Columns.pathLower).fetchAll(db)
        }
    }

    func search(_ namespace: Int64, under path: DropboxPath, query: String, limit: Int) async throws -> [Entry] {
        let prefix = path.isRoot ? "/" : path.lower + "/"
        let words = TreeRules.searchWords(query)
        return try await pool.read { db in
            let rows = try Entry.fetchCursor(db, sql: """
                SELECT * FROM entry WHERE namespace_id = ? AND substr(path_lower, 1, ?) = ? ORDER BY path_lower
                """, arguments: [namespace, prefix.count, prefix])
            var found: [Entry] = []
            while let entry = try rows.next(), found.count < limit {
                if TreeRules.nameMatches(entry, words) { found.append(entry) }
            }
            return found
        }
    }

    func files(_ namespace: Int64, limit: Int) async throws -> [Entry] {
        try await pool.read { db in
            try Entry.filter(Entry.Columns.namespaceId == namespace && Entry.Columns.isDir == false)
                .order(Entry.Columns.pathLower).limit(limit).fetchAll(db)
        }
    }

    func usedBytes(namespace: Int64) async throws -> Int64 {
        try await pool.read { db in try Self.usedBytes(db, namespace: namespace) }
    }

    func putFile(author: Account, path: DropboxPath, blob: String, bytes: Int64, mode: WriteMode, quota: Int64) async throws -> (Entry, replaced: String?) {
        try TreeRules.checkPut(path, mode)
        let namespace = author.namespaceId
        // One write transaction: the rev compared is the rev replaced, so of two members saving
        // the same note from the same parent_rev, one replaces it and the other gets a copy.
        return try await writeTree(namespace) { db in
            try Self.ensureFolders(db, author: author, path.parent)
            var target = path
            var existing: Entry? = nil
            if let current = try Self.fetch(db, namespace, path) {
                (target, existing) = try TreeRules.target(for: path, current: current, mode: mode, author: author.name) {
                    try Self.fetch(db, namespace, $0) != nil
                }
            }
            let used = try Self.usedBytes(db, namespace: namespace)
            if used - (existing?.bytes ?? 0) + bytes > quota { throw APIError.overQuota }
            var entry = Entry.file(at: target, replacing: existing, namespace: namespace, bytes: bytes, blob: blob,
                                   revision: try Self.nextRevision(db, namespace), author: author)
            try entry.save(db)
            try Self.recordChange(db, namespace, entry.pathLower, .put)
            return (entry, existing?.blob)
        }
    }

    func createFolder(author: Account, path: DropboxPath) async throws -> Entry {
        guard !path.isRoot else { throw APIError(.forbidden, "The root folder already exists") }
        let namespace = author.namespaceId
        return try await writeTree(namespace) { db in
            if let existing = try Self.fetch(db, namespace, path) { throw TreeRules.alreadyExists(existing) }
            try Self.ensureFolders(db, author: author, path)
            return try Self.fetch(db, namespace, path)!
        }
    }

    func delete(author: Account, path: DropboxPath) async throws -> (Entry, blobs: [String]) {
        guard !path.isRoot else { throw APIError(.forbidden, "The root folder cannot be deleted") }
        let namespace = author.namespaceId
        return try await writeTree(namespace) { db in
            guard let entry = try Self.fetch(db, namespace, path) else { throw APIError.notFound(path.display) }
            let prefix = path.lower + "/"
            let gone = try Row.fetchAll(db, sql: """
                SELECT path_lower, blob FROM entry WHERE namespace_id = ? AND (path_lower = ? OR substr(path_lower, 1, ?) = ?)
                """, arguments: [namespace, path.lower, prefix.count, prefix]).map { ($0["path_lower"] as String, $0["blob"] as String?) }
            // Every path under a deleted folder gets its own row: a client that had one of them
            // learns it is gone even if the folder is made again before it asks.
            for (pathLower, _) in gone { try Self.recordChange(db, namespace, pathLower, .delete) }
            let blobs = gone.compactMap(\.1)
            try db.execute(sql: """
                DELETE FROM entry WHERE namespace_id = ? AND (path_lower = ? OR substr(path_lower, 1, ?) = ?)
                """, arguments: [namespace, path.lower, prefix.count, prefix])
            return (entry, blobs)
        }
    }

    func move(author: Account, from: DropboxPath, to: DropboxPath) async throws -> Entry {
        try TreeRules.checkMove(from: from, to: to)
        let namespace = author.namespaceId
        return try await writeTree(namespace) { db in
            guard try Self.fetch(db, namespace, from) != nil else { throw APIError.notFound(from.display) }
            if to.lower != from.lower, let existing = try Self.fetch(db, namespace, to) { throw TreeRules.alreadyExists(existing) }
            try Self.ensureFolders(db, author: author, to.parent)
            let prefix = from.lower + "/"
            let moving = try Entry.fetchAll(db, sql: """
                SELECT * FROM entry WHERE namespace_id = ? AND (path_lower = ? OR substr(path_lower, 1, ?) = ?)
                """, arguments: [namespace, from.lower, prefix.count, prefix])
            let revision = try Self.nextRevision(db, namespace)
            for entry in moving {
                try Self.recordChange(db, namespace, entry.pathLower, .move)
                let moved = try entry.moved(from: from, to: to, revision: revision, author: author)
                try moved.update(db)
                try Self.recordChange(db, namespace, moved.pathLower, .move)
            }
            return try Self.fetch(db, namespace, to)!
        }
    }

    // MARK: Inside a transaction

    static func fetch(_ db: Database, _ namespace: Int64, _ path: DropboxPath) throws -> Entry? {
        try Entry.filter(Entry.Columns.namespaceId == namespace && Entry.Columns.pathLower == path.lower).fetchOne(db)
    }

    /// Revisions count per namespace: one counter for everything its members write.
    static func nextRevision(_ db: Database, _ namespace: Int64) throws -> Int64 {
        let revision = try Int64.fetchOne(db, sql: "SELECT next_revision FROM namespace WHERE id = ?", arguments: [namespace]) ?? 1
        try db.execute(sql: "UPDATE namespace SET next_revision = next_revision + 1 WHERE id = ?", arguments: [namespace])
        return revision
    }

    static func usedBytes(_ db: Database, namespace: Int64) throws -> Int64 {
        try Int64.fetchOne(db, sql: """
            SELECT (SELECT COALESCE(SUM(bytes), 0) FROM entry WHERE namespace_id = ?1)
                 + (SELECT COALESCE(SUM(bytes), 0) FROM image WHERE account_id IN (SELECT id FROM account WHERE namespace_id = ?1))
            """, arguments: [namespace]) ?? 0
    }

    /// Creates `path` and its missing ancestors as folders; 409 if one of them is a file.
    static func ensureFolders(_ db: Database, author: Account, _ path: DropboxPath) throws {
        let namespace = author.namespaceId
        for folder in TreeRules.folders(path) {
            if let existing = try fetch(db, namespace, folder) {
                guard existing.isDir else { throw TreeRules.notAFolder(existing) }
                continue
            }
            var entry = Entry.folder(at: folder, namespace: namespace, revision: try nextRevision(db, namespace), author: author)
            try entry.insert(db)
            try Self.recordChange(db, namespace, entry.pathLower, .createFolder)
        }
    }
}
