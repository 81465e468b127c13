public import Foundation
import Crypto

/// Files for tests: a fresh directory each, and SHA-256 of what landed on disk.
public enum TestFiles {
    /// A new, empty directory under the system temporary directory; remove it with `defer`.
    ///
    /// ```swift
    /// let dir = try TestFiles.makeTemporaryDirectory()
    /// defer { try? FileManager.default.removeItem(at: dir) }
    /// ```
    public static func makeTemporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Lower-case hex SHA-256 of a file, read in 1 MiB chunks.
    public static func sha256Hex(ofFile url: URL) throws -> String {
        var hasher = SHA256()
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// Lower-case hex SHA-256 of bytes in memory.
    public static func sha256Hex(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}
