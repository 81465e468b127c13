import FerrySystem
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writing a file so that a reader, or a crash, sees the old content or the new, never a
/// mix: a temporary file with the final mode, `fsync`, `rename`, `fsync` of the folder.
enum AtomicFile {
    static func write(_ data: Data, to url: URL, mode: mode_t) throws {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw failure("create", temporary) }
        var closed = false
        defer {
            if !closed { close(descriptor) }
        }
        do {
            // The umask may have removed bits from `mode`; the mode is part of the contract.
            guard fchmod(descriptor, mode) == 0 else { throw failure("set the mode of", temporary) }
            if let code = data.withUnsafeBytes({ FileDescriptorWrite.all(descriptor, $0) }) {
                errno = code
                throw failure("write", temporary)
            }
            guard fsync(descriptor) == 0 else { throw failure("flush", temporary) }
            closed = true
            guard close(descriptor) == 0 else { throw failure("close", temporary) }
            guard rename(temporary.path, url.path) == 0 else { throw failure("rename into place", url) }
        } catch {
            unlink(temporary.path)
            throw error
        }
        syncDirectory(directory)
    }

    /// Makes a rename or unlink in `directory` durable (best effort: some file systems refuse).
    static func syncDirectory(_ directory: URL) {
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    private static func failure(_ action: String, _ url: URL) -> AppRegistryError {
        AppRegistryError(.fileSystem, "cannot \(action) \(url.path): \(String(cString: strerror(errno)))")
    }
}
