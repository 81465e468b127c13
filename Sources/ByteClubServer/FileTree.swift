import Foundation
import GRDB

/// How `files_put` and `commit_chunked_upload` treat an existing file at the target path.
struct WriteMode: Sendable {
    /// Replace an existing file (Dropbox's default `true`); `false`: write "name (1).txt".
    var overwrite = true
    /// The `rev` the client's edit started from. The latest → replace; any other (or a folder
    /// there) → the body is kept as "name (<author>'s conflicted copy).txt". Wins over `overwrite`.
    var parentRev: String?
    /// On conflict, write under another name instead of failing with 409 (Dropbox v1 always did).
    var autorename = true

    /// From a request's `overwrite`, `parent_rev` (empty = none) and `autorename`.
    init(_ parameters: [String: String]) throws(APIError) {
        overwrite = try parameters.bool("overwrite", default: true)
        parentRev = parameters["parent_rev"].flatMap { $0.isEmpty ? nil : $0 }
        autorename = try parameters.bool("autorename", default: true)
    }
}

/// A namespace's tree of entries, shared by its members: every change is one write
/// transaction, so a crash leaves either the old tree or the new one. Reads take the
/// namespace; writes take the member writing (its namespace, and the entries' `modifier`).
extension Store {
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

    /// Entries under `path` (not `path` itself) whose names contain every word of `query`.
    func search(_ namespace: Int64, under path: DropboxPath, query: String, limit: Int) async throws -> [Entry] {
        let prefix = path.isRoot ? "/" : path.lower + "/"
        let words = query.lowercased().split(separator: " ").map(String.init)
        return try await pool.read { db in
            let rows = try Entry.fetchCursor(db, sql: """
                SELECT * FROM entry WHERE namespace_id = ? AND substr(path_lower, 1, ?) = ? ORDER BY path_lower
                """, arguments: [namespace, prefix.count, prefix])
            var found: [Entry] = []
            while let entry = try rows.next(), found.count < limit {
                let name = String(entry.pathLower.split(separator: "/").last ?? "")
                if words.allSatisfy({ name.contains($0) }) { found.append(entry) }
            }
            return found
        }
    }

    /// Puts a durable blob at `path` (creating missing parent folders), resolving conflicts by
    /// `mode`. Returns the new entry and the blob it replaced, which the caller deletes.
    func putFile(author: Account, path: DropboxPath, blob: String, bytes: Int64, mode: WriteMode, quota: Int64) async throws -> (Entry, replaced: String?) {
        guard !path.isRoot else { throw APIError.badParameter("path", "cannot write to the root folder") }
        if let parentRev = mode.parentRev, Entry.revision(fromRev: parentRev) == nil {
            throw APIError.badParameter("parent_rev", "'\(parentRev)' is not a rev of this server (take it from the file's metadata)")
        }
        let namespace = author.namespaceId
        // One write transaction: the rev compared is the rev replaced, so of two members saving
        // the same note from the same parent_rev, one replaces it and the other gets a copy.
        return try await writeTree(namespace) { db in
            try Self.ensureFolders(db, author: author, path.parent)
            var target = path
            var existing = try Self.fetch(db, namespace, target)
            if let current = existing, let rename = Self.conflictName(current: current, mode: mode, author: author.name) {
                guard mode.autorename else {
                    throw APIError(.conflict, "Conflict: '\(current.pathDisplay)' exists and was not overwritten")
                }
                var n = 1
                repeat {
                    target = rename(path, n)
                    n += 1
                    guard n < 10_000 else { throw APIError(.conflict, "Conflict: no free name for '\(path.display)'") }
                } while try Self.fetch(db, namespace, target) != nil
                existing = nil
            }
            let used = try Self.usedBytes(db, namespace: namespace)
            if used - (existing?.bytes ?? 0) + bytes > quota { throw APIError.overQuota }
            let revision = try Self.nextRevision(db, namespace)
            var entry = Entry(
                id: existing?.id, namespaceId: namespace, pathLower: target.lower,
                pathDisplay: existing?.pathDisplay ?? target.display, parentLower: target.parent.lower,
                isDir: false, bytes: bytes, revision: revision, blob: blob, sha256: nil,
                mimeType: Metadata.mimeType(for: target.display), modified: Date().timeIntervalSince1970,
                modifierId: author.id, modifierName: author.name)
            try entry.save(db)
            try Self.recordChange(db, namespace, entry.pathLower, .put)
            return (entry, existing?.blob)
        }
    }

    /// Whether a put at `current`'s path must go elsewhere, and how the other names are made:
    /// a stale `parent_rev` (or a folder in the way of one) → "name (<author>'s conflicted
    /// copy).txt"; `overwrite=false` or a folder in the way → "name (1).txt". No parent_rev
    /// given and a file there → `nil`: replace it.
    static func conflictName(current: Entry, mode: WriteMode, author: String) -> ((DropboxPath, Int) -> DropboxPath)? {
        if let parentRev = mode.parentRev {
            if !current.isDir && parentRev == current.rev { return nil }
            return { path, n in path.conflictedCopy(by: author, n) }
        }
        if current.isDir || !mode.overwrite { return { path, n in path.conflictCandidate(n) } }
        return nil
    }

    /// `fileops/create_folder`: 403 when something is already there.
    func createFolder(author: Account, path: DropboxPath) async throws -> Entry {
        guard !path.isRoot else { throw APIError(.forbidden, "The root folder already exists") }
        let namespace = author.namespaceId
        return try await writeTree(namespace) { db in
            if let existing = try Self.fetch(db, namespace, path) {
                throw APIError(.forbidden, "A \(existing.isDir ? "folder" : "file") already exists at path '\(existing.pathDisplay)'")
            }
            try Self.ensureFolders(db, author: author, path)
            return try Self.fetch(db, namespace, path)!
        }
    }

    /// `fileops/delete`: the entry and everything under it. Returns the deleted entry and the
    /// blobs to remove once the transaction committed.
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

    /// `fileops/move`: renames an entry and everything under it.
    func move(author: Account, from: DropboxPath, to: DropboxPath) async throws -> Entry {
        guard !from.isRoot, !to.isRoot else { throw APIError(.forbidden, "The root folder cannot be moved") }
        if to.isWithin(from) && to.lower != from.lower {
            throw APIError(.forbidden, "Cannot move a folder into itself")
        }
        let namespace = author.namespaceId
        return try await writeTree(namespace) { db in
            guard try Self.fetch(db, namespace, from) != nil else { throw APIError.notFound(from.display) }
            if to.lower != from.lower, let existing = try Self.fetch(db, namespace, to) {
                throw APIError(.forbidden, "A \(existing.isDir ? "folder" : "file") already exists at path '\(existing.pathDisplay)'")
            }
            try Self.ensureFolders(db, author: author, to.parent)
            let prefix = from.lower + "/"
            let moving = try Entry.fetchAll(db, sql: """
                SELECT * FROM entry WHERE namespace_id = ? AND (path_lower = ? OR substr(path_lower, 1, ?) = ?)
                """, arguments: [namespace, from.lower, prefix.count, prefix])
            let revision = try Self.nextRevision(db, namespace)
            for var entry in moving {
                try Self.recordChange(db, namespace, entry.pathLower, .move)
                let rest = entry.pathDisplay.dropFirst(from.display.count)
                let newPath = try DropboxPath.parse(decoded: to.display + rest)
                entry.pathDisplay = newPath.display
                entry.pathLower = newPath.lower
                entry.parentLower = newPath.parent.lower
                entry.revision = revision
                entry.modified = Date().timeIntervalSince1970
                entry.modifierId = author.id
                entry.modifierName = author.name
                try entry.update(db)
                try Self.recordChange(db, namespace, entry.pathLower, .move)
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

    /// Creates `path` and its missing ancestors as folders; 409 if one of them is a file.
    static func ensureFolders(_ db: Database, author: Account, _ path: DropboxPath) throws {
        let namespace = author.namespaceId
        var current = DropboxPath.root
        for component in path.components {
            current = current.appending(component)
            if let existing = try fetch(db, namespace, current) {
                guard existing.isDir else {
                    throw APIError(.conflict, "Conflict: '\(existing.pathDisplay)' is a file, not a folder")
                }
                continue
            }
            var folder = Entry(
                id: nil, namespaceId: namespace, pathLower: current.lower, pathDisplay: current.display,
                parentLower: current.parent.lower, isDir: true, bytes: 0, revision: try nextRevision(db, namespace),
                blob: nil, sha256: nil, mimeType: nil, modified: Date().timeIntervalSince1970,
                modifierId: author.id, modifierName: author.name)
            try folder.insert(db)
            try Self.recordChange(db, namespace, folder.pathLower, .createFolder)
        }
    }
}
