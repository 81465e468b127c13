import FerryEngine
import FerrySystem
import Foundation
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A batch item's file while its body arrives: an unnamed file (`O_TMPFILE`) in the
/// destination's folder, which `commit()` links under the destination's name once the body is
/// whole. Nothing half-written ever carries the name, and a killed process leaves nothing
/// behind. Where the file system has no unnamed files, a hidden `.<name>.ferry-<random>` is
/// written and renamed instead. Mode 0666 less the umask, as curl and shells create files.
final class IncomingFile {
    /// How the finished file gets its name: `automatic` takes the best this system allows;
    /// the others force a fallback (the tests run each, since this machine needs none).
    enum Naming { case automatic, throughProc, byCopy, renamed }

    let destination: String
    private let naming: Naming
    private var fd: Int32
    /// Set when the file was created with a name (no `O_TMPFILE` here).
    private var temporaryPath: String?
    private var written: off_t = 0

    private static let linksByDescriptor = Atomic<Bool>(true)
    /// `AT_EMPTY_PATH`, a _GNU_SOURCE name Swift does not see.
    private static let emptyPath: Int32 = 0x1000

    /// `__O_TMPFILE | O_DIRECTORY`; Glibc's macro is not imported into Swift.
    private static let unnamedFileFlag: Int32 = 0o20000000 | O_DIRECTORY

    init(destination: String, naming: Naming = .automatic) throws {
        self.destination = destination
        self.naming = naming
        let folder = Self.folder(of: destination)
        fd = naming == .renamed ? -1 : open(folder, Self.unnamedFileFlag | O_RDWR | O_CLOEXEC, 0o666)
        if naming == .renamed || (fd < 0 && (errno == EISDIR || errno == EOPNOTSUPP || errno == EINVAL)) {
            let path = Self.temporaryName(for: destination)
            fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o666)
            if fd >= 0 { temporaryPath = path }
        }
        guard fd >= 0 else { throw Self.failure("cannot create a file in \(folder)", destination) }
    }

    /// Appends the buffer.
    func write(_ buffer: ByteBuffer) throws {
        if let code = buffer.withUnsafeReadableBytes({ FileDescriptorWrite.all(fd, $0, at: Int64(written)) }) {
            throw Self.failure("cannot write \(destination)", destination, code)
        }
        written += off_t(buffer.readableBytes)
    }

    /// Gives the finished file its name, replacing a file already there.
    func commit() throws {
        defer { closeFile() }
        if let temporaryPath {
            self.temporaryPath = nil
            try Self.rename(temporaryPath, to: destination)
            return
        }
        // Linux 6.10 and later link an unnamed file we opened by its descriptor; older kernels
        // want CAP_DAC_READ_SEARCH for that, and the /proc path (a few µs more) works for all.
        if naming == .automatic, Self.linksByDescriptor.load(ordering: .relaxed) {
            if linkat(fd, "", AT_FDCWD, destination, Self.emptyPath) == 0 { return }
            if errno == ENOENT || errno == EPERM { Self.linksByDescriptor.store(false, ordering: .relaxed) }
        }
        let path = Self.temporaryName(for: destination)
        if naming != .byCopy {
            let handle = "/proc/self/fd/\(fd)"
            if linkat(AT_FDCWD, handle, AT_FDCWD, destination, AT_SYMLINK_FOLLOW) == 0 { return }
            let code = errno
            // Replacing needs a name to rename from; no /proc means copying into a named file.
            if code == EEXIST, linkat(AT_FDCWD, handle, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 {
                try Self.rename(path, to: destination)
                return
            }
            guard code == EEXIST || code == ENOENT else { throw Self.failure("cannot name \(destination)", destination, code) }
        }
        try copy(to: path)
        try Self.rename(path, to: destination)
    }

    /// Drops what was written.
    func discard() {
        if let temporaryPath {
            unlink(temporaryPath)
            self.temporaryPath = nil
        }
        closeFile()
    }

    deinit { discard() }

    private func closeFile() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
    }

    private func copy(to path: String) throws {
        let out = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o666)
        guard out >= 0 else { throw Self.failure("cannot create \(path)", destination) }
        defer { close(out) }
        var offset: off_t = 0
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.failure("cannot read back \(destination)", destination) }
        while offset < info.st_size {
            let sent = sendfile(out, fd, &offset, Int(info.st_size - offset))
            if sent < 0, errno == EINTR { continue }
            if sent <= 0 {
                let code = errno
                unlink(path)
                throw Self.failure("cannot write \(path)", destination, code)
            }
        }
    }

    private static func rename(_ from: String, to: String) throws {
        guard Glibc.rename(from, to) == 0 else {
            let code = errno
            unlink(from)
            throw failure("cannot move the download to \(to)", to, code)
        }
    }

    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func temporaryName(for destination: String) -> String {
        let name = destination.lastIndex(of: "/").map { String(destination[destination.index(after: $0)...]) } ?? destination
        let random = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        return folder(of: destination) + "/." + name + ".ferry-" + random
    }

    /// `code` defaults to `errno` as it is at the call, before anything here can change it.
    private static func failure(_ what: String, _ path: String, _ code: Int32 = errno) -> FerryError {
        OutputFile.error(what, url: URL(fileURLWithPath: path), code: code)
    }
}
