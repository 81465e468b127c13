import Foundation

/// The sidecar `FILE.ferry-resume` that lets `ferry get --continue` pick up a download:
/// which URL the partial FILE came from, the validator of that representation (sent as
/// `If-Range`, so a changed resource restarts from zero instead of splicing) and how many
/// bytes were in the file when it stopped.
struct ResumeRecord: Codable, Equatable {
    var url: String
    var validator: String
    var bytes: Int64

    static func location(for file: URL) -> URL {
        URL(fileURLWithPath: file.path + ".ferry-resume")
    }

    static func load(for file: URL) -> ResumeRecord? {
        guard let data = try? Data(contentsOf: location(for: file)) else { return nil }
        return try? JSONDecoder().decode(ResumeRecord.self, from: data)
    }

    /// Written atomically, readable by the owner only (the URL may carry a token).
    func save(for file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let target = Self.location(for: file)
        try encoder.encode(self).write(to: target, options: .atomic)
        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target.path)
    }

    static func remove(for file: URL) {
        try? FileManager.default.removeItem(at: location(for: file))
    }
}

/// The size of a regular file, or nil when there is none.
func sizeOfFile(_ url: URL) -> Int64? {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
        (attributes[.type] as? FileAttributeType) == .typeRegular
    else { return nil }
    return (attributes[.size] as? NSNumber)?.int64Value
}

/// The mode a new file normally gets: 0666 less the umask (read once).
let defaultFileMode: mode_t = {
    let mask = umask(0)
    umask(mask)
    return 0o666 & ~mask
}()

/// Gives a finished download that mode; the engine creates files 0600 while in flight.
func applyDefaultMode(_ url: URL) {
    chmod(url.path, defaultFileMode)
}
