import FerrySystem
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// File bodies on disk, written atomically: a body goes to `tmp/`, is fsynced, renamed to a
/// fresh name under `blobs/` (the directory fsynced too), and only then does the caller write
/// the row that points to it. A crash before the row leaves an orphan blob, removed at the
/// next start, never a torn file behind a row.
final class BlobStore: Sendable {
    let root: String
    var tmpDir: String { root + "/tmp" }
    var blobDir: String { root + "/blobs" }
    var chunkDir: String { root + "/chunks" }
    var thumbDir: String { root + "/thumbs" }

    init(root: String) throws {
        self.root = root
        for dir in [root, tmpDir, blobDir, chunkDir, thumbDir] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
    }

    func path(of blob: String) -> String { blobDir + "/" + blob }
    func chunkPath(of id: String) -> String { chunkDir + "/" + id }

    /// Opens a new temporary file for a body.
    func makeTemp() throws -> TempFile {
        try TempFile(path: tmpDir + "/" + UUID().uuidString.lowercased(), append: false)
    }

    /// Makes `temp` durable and gives it a fresh blob name; the temp file is gone afterwards.
    func commit(_ temp: TempFile) throws -> String {
        try temp.sync()
        try temp.close()
        return try adopt(path: temp.path)
    }

    /// Moves an existing, already fsynced file (a finished chunked upload) into `blobs/`.
    func adopt(path: String) throws -> String {
        let name = UUID().uuidString.lowercased()
        guard rename(path, self.path(of: name)) == 0 else { throw POSIXFailure("rename", errno) }
        try Self.syncDirectory(blobDir)
        return name
    }

    func remove(blob: String) {
        unlink(path(of: blob))
        if let thumbs = try? FileManager.default.contentsOfDirectory(atPath: thumbDir) {
            for thumb in thumbs where thumb.hasPrefix(blob) { unlink(thumbDir + "/" + thumb) }
        }
    }

    /// Start-up cleaning: unfinished temp files, and blobs no row points to (a crash between
    /// rename and row). Returns how many files were removed.
    @discardableResult
    func clean(referenced: Set<String>) -> Int {
        var removed = 0
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: tmpDir)) ?? [] {
            if unlink(tmpDir + "/" + name) == 0 { removed += 1 }
        }
        for name in (try? fm.contentsOfDirectory(atPath: blobDir)) ?? [] where !referenced.contains(name) {
            if unlink(path(of: name)) == 0 { removed += 1 }
        }
        return removed
    }

    static func syncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { throw POSIXFailure("open dir", errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw POSIXFailure("fsync dir", errno) }
    }

    static func size(of path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(st.st_size)
    }
}

/// A file being written, through a plain descriptor.
final class TempFile: @unchecked Sendable {  // used by one request's task at a time
    let path: String
    private var fd: Int32
    private(set) var bytesWritten: Int64 = 0

    init(path: String, append: Bool) throws {
        self.path = path
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        fd = open(path, flags, 0o600)
        guard fd >= 0 else { throw POSIXFailure("open", errno) }
        if append { bytesWritten = BlobStore.size(of: path) ?? 0 }
    }

    func write(_ buffer: ByteBuffer) throws {
        if let code = buffer.withUnsafeReadableBytes({ FileDescriptorWrite.all(fd, $0) }) {
            throw POSIXFailure("write", code)
        }
        bytesWritten += Int64(buffer.readableBytes)
    }

    func sync() throws {
        guard fsync(fd) == 0 else { throw POSIXFailure("fsync", errno) }
    }

    func close() throws {
        guard fd >= 0 else { return }
        let result = Glibc.close(fd)
        fd = -1
        guard result == 0 else { throw POSIXFailure("close", errno) }
    }

    /// Closes and removes the file (a failed or refused upload).
    func discard() {
        try? close()
        unlink(path)
    }

    deinit { if fd >= 0 { _ = Glibc.close(fd) } }
}

struct POSIXFailure: Error, CustomStringConvertible {
    let call: String
    let code: Int32
    init(_ call: String, _ code: Int32) { self.call = call; self.code = code }
    var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
}
