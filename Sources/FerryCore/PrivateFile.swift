public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Files only their owner may read (secrets, cookies): written whole, `0600`, in a `0700`
/// folder, and never readable by others even for a moment.
///
/// ```swift
/// try PrivateFile.replace(configDirectory.appendingPathComponent("account.json"), with: Data(token.utf8))
/// ```
public enum PrivateFile {
    /// What went wrong, naming the file and the system's reason.
    public struct WriteError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Replaces `url` with `data`: created `0600` under a temporary name beside it (open(2)
    /// with `O_EXCL`: `FileManager.createFile` writes first and sets the mode after), synced
    /// unless `sync` is false (a cache's files, which may be lost), then renamed over the old
    /// file, so readers see the old or the new. The folder is created `0700` when missing.
    public static func replace(_ url: URL, with data: Data, sync: Bool = true) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Unique per write: two writers of one file in a process must not share a temporary.
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        unlink(temporary.path)
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw WriteError(description: "cannot write \(temporary.path): \(String(cString: strerror(errno)))") }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = !sync || fsync(descriptor) == 0
        close(descriptor)
        guard written == data.count, synced else {
            unlink(temporary.path)
            throw WriteError(description: "cannot write \(temporary.path)")
        }
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw WriteError(description: "cannot save \(url.path): \(reason)")
        }
    }
}
