import Foundation

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

/// The file tree's rules, the same whichever database keeps the tree: what a write may do, the
/// names conflicts get, and the rows a write makes. Each store runs them inside its own
/// transaction; only the reading and writing of rows differs.
enum TreeRules {
    /// Refuses a put to the root or with a `parent_rev` this server never wrote (400).
    static func checkPut(_ path: DropboxPath, _ mode: WriteMode) throws(APIError) {
        guard !path.isRoot else { throw APIError.badParameter("path", "cannot write to the root folder") }
        if let parentRev = mode.parentRev, Entry.revision(fromRev: parentRev) == nil {
            throw APIError.badParameter("parent_rev", "'\(parentRev)' is not a rev of this server (take it from the file's metadata)")
        }
    }

    /// Refuses moving the root, or a folder into itself (403).
    static func checkMove(from: DropboxPath, to: DropboxPath) throws(APIError) {
        guard !from.isRoot, !to.isRoot else { throw APIError(.forbidden, "The root folder cannot be moved") }
        if to.isWithin(from) && to.lower != from.lower {
            throw APIError(.forbidden, "Cannot move a folder into itself")
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

    /// Where a put goes when `current` is at `path`: `path` itself (replacing `current`), or
    /// the first free conflict name (`exists` says which are taken); 409 when `mode` forbids
    /// renaming or no name is free.
    static func target(for path: DropboxPath, current: Entry, mode: WriteMode, author: String,
                       exists: (DropboxPath) throws -> Bool) throws -> (DropboxPath, replacing: Entry?) {
        guard let rename = conflictName(current: current, mode: mode, author: author) else { return (path, current) }
        guard mode.autorename else {
            throw APIError(.conflict, "Conflict: '\(current.pathDisplay)' exists and was not overwritten")
        }
        for n in 1..<10_000 {
            let candidate = rename(path, n)
            if try !exists(candidate) { return (candidate, nil) }
        }
        throw APIError(.conflict, "Conflict: no free name for '\(path.display)'")
    }

    /// `path` and its ancestors below the root, outermost first: the folders a write needs.
    static func folders(_ path: DropboxPath) -> [DropboxPath] {
        var current = DropboxPath.root
        return path.components.map { component in
            current = current.appending(component)
            return current
        }
    }

    /// The 409 for a file where a folder is needed.
    static func notAFolder(_ existing: Entry) -> APIError {
        APIError(.conflict, "Conflict: '\(existing.pathDisplay)' is a file, not a folder")
    }

    /// The 403 for something already at a path.
    static func alreadyExists(_ existing: Entry) -> APIError {
        APIError(.forbidden, "A \(existing.isDir ? "folder" : "file") already exists at path '\(existing.pathDisplay)'")
    }
}

extension Entry {
    /// The row of a file put at `target`, replacing `existing` (keeping its id and display case).
    static func file(at target: DropboxPath, replacing existing: Entry?, namespace: Int64, bytes: Int64, blob: String,
                     revision: Int64, author: Account) -> Entry {
        Entry(
            id: existing?.id, namespaceId: namespace, pathLower: target.lower,
            pathDisplay: existing?.pathDisplay ?? target.display, parentLower: target.parent.lower,
            isDir: false, bytes: bytes, revision: revision, blob: blob, sha256: nil,
            mimeType: Metadata.mimeType(for: target.display), modified: Date().timeIntervalSince1970,
            modifierId: author.id, modifierName: author.name)
    }

    /// The row of a new folder at `path`.
    static func folder(at path: DropboxPath, namespace: Int64, revision: Int64, author: Account) -> Entry {
        Entry(
            id: nil, namespaceId: namespace, pathLower: path.lower, pathDisplay: path.display,
            parentLower: path.parent.lower, isDir: true, bytes: 0, revision: revision,
            blob: nil, sha256: nil, mimeType: nil, modified: Date().timeIntervalSince1970,
            modifierId: author.id, modifierName: author.name)
    }

    /// This entry (at or under `from`) after a move of `from` to `to`.
    func moved(from: DropboxPath, to: DropboxPath, revision: Int64, author: Account) throws -> Entry {
        var entry = self
        let rest = pathDisplay.dropFirst(from.display.count)
        let newPath = try DropboxPath.parse(decoded: to.display + rest)
        entry.pathDisplay = newPath.display
        entry.pathLower = newPath.lower
        entry.parentLower = newPath.parent.lower
        entry.revision = revision
        entry.modified = Date().timeIntervalSince1970
        entry.modifierId = author.id
        entry.modifierName = author.name
        return entry
    }
}

extension TreeRules {
    /// The words of a `/1/search` query, each of which a name must contain.
    static func searchWords(_ query: String) -> [String] {
        query.lowercased().split(separator: " ").map(String.init)
    }

    /// Whether `entry`'s name contains every word.
    static func nameMatches(_ entry: Entry, _ words: [String]) -> Bool {
        let name = String(entry.pathLower.split(separator: "/").last ?? "")
        return words.allSatisfy { name.contains($0) }
    }
}
