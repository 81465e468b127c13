public import Foundation
import Synchronization
import Crypto

/// Files for tests: a fresh directory each, and SHA-256 of what landed on disk.
public enum TestFiles {
    /// A new, empty directory under the system temporary directory. Remove it with `defer`
    /// when done; any left are removed when the test process exits (kept with
    /// FERRY_KEEP_TEST_LOGS=1, to read after a failure).
    ///
    /// ```swift
    /// let dir = try TestFiles.makeTemporaryDirectory()
    /// defer { try? FileManager.default.removeItem(at: dir) }
    /// ```
    public static func makeTemporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        madeDirectories.withLock { made in
            if made.isEmpty, ProcessInfo.processInfo.environment["FERRY_KEEP_TEST_LOGS"] == nil {
                atexit { TestFiles.removeMadeDirectories() }
            }
            made.append(url)
        }
        return url
    }

    /// Every directory ``makeTemporaryDirectory()`` made in this process.
    private static let madeDirectories = Mutex<[URL]>([])

    private static func removeMadeDirectories() {
        for url in madeDirectories.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
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

    /// Base64 SHA-256 of bytes in memory (the form of public-key pins).
    public static func sha256Base64(of data: Data) -> String {
        Data(SHA256.hash(data: data)).base64EncodedString()
    }
}
