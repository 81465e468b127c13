#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
public import Foundation

/// One ferryd per user: an exclusive `flock` on the lock file, held for the daemon's life.
///
/// Taken before the socket is bound, so two clients that start ferryd at once get one
/// daemon; the loser exits quietly. Only the holder may remove a stale socket file. The
/// kernel drops the lock when the process dies, even by `kill -9`.
///
/// ```swift
/// guard let lock = try InstanceLock.acquire(at: lockURL) else { print("ferryd is already running"); exit(0) }
/// defer { lock.release() }
/// ```
public final class InstanceLock: Sendable {
    private let descriptor: Int32
    public let url: URL

    private init(descriptor: Int32, url: URL) {
        self.descriptor = descriptor
        self.url = url
    }

    /// The lock, or nil when another process holds it.
    ///
    /// - Throws: ``DaemonError`` when the lock file cannot be opened (its folder is missing
    ///   or not ours).
    public static func acquire(at url: URL) throws -> InstanceLock? {
        let descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw DaemonError("cannot open the lock file \(url.path): \(String(cString: strerror(errno)))")
        }
        if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            close(descriptor)
            if error == EWOULDBLOCK { return nil }
            throw DaemonError("cannot lock \(url.path): \(String(cString: strerror(error)))")
        }
        // The pid, for a person looking; the lock itself is what counts.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return InstanceLock(descriptor: descriptor, url: url)
    }

    /// Releases the lock (closing the file releases it too).
    public func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// A failure of ferryd itself (not of a request): a sentence that says what to do.
public struct DaemonError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
