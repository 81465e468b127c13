import Foundation

/// A path in an account's Dropbox-style tree, checked and normalised: no `..`, no encoded
/// slash, no NUL or control characters, no overlong names. Case-insensitive like Dropbox's:
/// ``lower`` is the key, ``display`` keeps the case given.
struct DropboxPath: Sendable, Hashable, CustomStringConvertible {
    /// Path components as given (NFC), never empty strings.
    let components: [String]

    static let root = DropboxPath(components: [])
    static let maxComponentBytes = 255
    static let maxPathBytes = 4096

    var display: String { "/" + components.joined(separator: "/") }
    var lower: String { display.lowercased() }
    var isRoot: Bool { components.isEmpty }
    var name: String { components.last ?? "" }
    var parent: DropboxPath { DropboxPath(components: Array(components.dropLast())) }
    var description: String { display }

    func appending(_ name: String) -> DropboxPath { DropboxPath(components: components + [name]) }

    /// `path` with its last component replaced.
    func renamed(_ name: String) -> DropboxPath { parent.appending(name) }

    /// Whether `self` is `other` or inside it.
    func isWithin(_ other: DropboxPath) -> Bool {
        lower == other.lower || lower.hasPrefix(other.lower == "/" ? "/" : other.lower + "/")
    }

    /// Parses the percent-encoded rest of a URL path (after `/dropbox`), component by component,
    /// so that an encoded slash (`%2F`) stays an error instead of becoming a separator.
    static func parse(encoded raw: Substring, parameter: String = "path") throws(APIError) -> DropboxPath {
        var decoded: [String] = []
        for piece in raw.split(separator: "/", omittingEmptySubsequences: true) {
            guard let component = String(piece).removingPercentEncoding else {
                throw APIError.badParameter(parameter, "bad percent-encoding")
            }
            if component.contains("/") { throw APIError.badParameter(parameter, "encoded slash in a name") }
            decoded.append(component)
        }
        return try make(decoded, parameter: parameter)
    }

    /// Parses an already-decoded path, as given in a query parameter (`path=`, `from_path=`).
    static func parse(decoded raw: String, parameter: String = "path") throws(APIError) -> DropboxPath {
        try make(raw.split(separator: "/", omittingEmptySubsequences: true).map(String.init), parameter: parameter)
    }

    private static func make(_ pieces: [String], parameter: String) throws(APIError) -> DropboxPath {
        var components: [String] = []
        var total = 0
        for piece in pieces {
            if piece == "." { continue }
            if piece == ".." { throw APIError.badParameter(parameter, "'..' is not allowed") }
            if piece.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                throw APIError.badParameter(parameter, "control characters (NUL…) are not allowed")
            }
            if piece.contains("\\") { throw APIError.badParameter(parameter, "backslash is not allowed") }
            let name = piece.precomposedStringWithCanonicalMapping
            if name.trimmingCharacters(in: .whitespaces).isEmpty {
                throw APIError.badParameter(parameter, "empty name")
            }
            if name.utf8.count > maxComponentBytes {
                throw APIError.badParameter(parameter, "name longer than \(maxComponentBytes) bytes")
            }
            total += name.utf8.count + 1
            if total > maxPathBytes { throw APIError.badParameter(parameter, "path longer than \(maxPathBytes) bytes") }
            components.append(name)
        }
        return DropboxPath(components: components)
    }

    /// "name (1).txt", "name (2).txt"… the names autorename tries after `name.txt`.
    func conflictCandidate(_ n: Int) -> DropboxPath {
        insertingBeforeExtension(" (\(n))")
    }

    /// "notes (alice's conflicted copy).txt", then "notes (alice's conflicted copy 2).txt"…: where
    /// a write based on a stale `parent_rev` goes, named after the member who wrote it.
    func conflictedCopy(by author: String, _ n: Int) -> DropboxPath {
        insertingBeforeExtension(" (\(author)'s conflicted copy\(n > 1 ? " \(n)" : ""))")
    }

    /// The name with `suffix` before its extension ("a.txt" → "a<suffix>.txt"), the stem
    /// shortened when needed so that the name stays within ``maxComponentBytes``.
    private func insertingBeforeExtension(_ suffix: String) -> DropboxPath {
        let name = self.name
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 } ?? name.endIndex
        var stem = String(name[..<dot])
        let tail = suffix + name[dot...]
        while !stem.isEmpty && stem.utf8.count + tail.utf8.count > Self.maxComponentBytes { stem.removeLast() }
        return renamed(stem + tail)
    }
}
