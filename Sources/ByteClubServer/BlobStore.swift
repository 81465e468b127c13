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

/// File bodies on disk, written atomically: a body goes to this instance's folder under `tmp/`,
/// is fsynced, renamed to a fresh name under `blobs/` (the directory fsynced too), and only then
/// does the caller write the row that points to it. A crash before the row leaves an orphan
/// blob, removed at a later start, never a torn file behind a row.
///
/// Several servers may share the folder (instances on one PostgreSQL database): names are
/// UUIDs, renames atomic, and each instance writes its temp files in `tmp/<uuid>/`, which it
/// holds an `flock` on while it runs. The start-up cleaning removes only the temp folders of
/// instances gone (their lock free) and blobs no row names that are older than
/// ``orphanAge``: a blob another instance just renamed gets its row within milliseconds.
final class BlobStore: Sendable {
    let root: String
    /// This instance's temp folder, `tmp/<uuid>`.
    let tmpDir: String
    var blobDir: String { root + "/blobs" }
    var chunkDir: String { root + "/chunks" }
    var thumbDir: String { root + "/thumbs" }
    /// How long an unreferenced blob is left alone (by the time of its last rename or write).
    static let orphanAge: TimeInterval = 15 * 60
    /// The open `tmp/<uuid>/lock`, `flock`ed until this store goes (the process ends, or deinit).
    private let lockFD: Int32

    init(root: String) throws {
        self.root = root
        tmpDir = root + "/tmp/" + UUID().uuidString.lowercased()
        for dir in [root, root + "/tmp", tmpDir] + ["blobs", "chunks", "thumbs"].map({ root + "/" + $0 }) {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let fd = open(tmpDir + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXFailure("open lock", errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            Glibc.close(fd)
            throw POSIXFailure("flock", errno)
        }
        lockFD = fd
    }

    deinit {
        Glibc.close(lockFD)
        try? FileManager.default.removeItem(atPath: tmpDir)
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

    /// Start-up cleaning: the temp folders of instances no longer running (and loose temp files
    /// of older versions), and blobs no row points to (a crash between rename and row) older
    /// than ``orphanAge``. Returns how many files were removed.
    @discardableResult
    func clean(referenced: Set<String>) -> Int {
        var removed = 0
        let fm = FileManager.default
        let tmpRoot = root + "/tmp"
        for name in (try? fm.contentsOfDirectory(atPath: tmpRoot)) ?? [] where tmpRoot + "/" + name != tmpDir {
            let path = tmpRoot + "/" + name
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if !isDirectory.boolValue {
                if unlink(path) == 0 { removed += 1 }
            } else if Self.isAbandoned(path) {
                removed += ((try? fm.contentsOfDirectory(atPath: path)) ?? []).filter { $0 != "lock" }.count
                try? fm.removeItem(atPath: path)
            }
        }
        let cutoff = Date().timeIntervalSince1970 - Self.orphanAge
        for name in (try? fm.contentsOfDirectory(atPath: blobDir)) ?? [] where !referenced.contains(name) {
            guard let changed = Self.changeTime(of: path(of: name)), changed < cutoff else { continue }
            if unlink(path(of: name)) == 0 { removed += 1 }
        }
        return removed
    }

    /// Whether the instance that made temp folder `path` is gone: its lock can be taken.
    private static func isAbandoned(_ path: String) -> Bool {
        let fd = open(path + "/lock", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return true }  // no lock file: never fully made
        defer { Glibc.close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// The inode's change time (a rename sets it), in seconds since 1970.
    static func changeTime(of path: String) -> TimeInterval? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return TimeInterval(st.st_ctim.tv_sec) + TimeInterval(st.st_ctim.tv_nsec) / 1e9
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
