#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// Who is at the other end of a Unix socket, as the kernel recorded it when the peer
/// connected (`SO_PEERCRED`). Trust this, never a pid the peer sends.
///
/// ```swift
/// let peer = try PeerCredentials.of(socket: fd)
/// guard peer.uid == getuid() else { close(fd); return }
/// let who = try registry.identify(pid: peer.pid)
/// ```
public struct PeerCredentials: Sendable, Equatable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// `struct ucred` of <sys/socket.h> (hidden from Swift without _GNU_SOURCE): same layout.
    /// ferryd reads it through SwiftNIO's socket options into this type.
    package struct UCred {
        package var pid: Int32 = 0
        package var uid: UInt32 = 0
        package var gid: UInt32 = 0
        package init() {}
    }

    package init(_ credentials: UCred) {
        self.init(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }

    /// The credentials of the peer of the Unix socket `fd` (connected or accepted).
    ///
    /// - Throws: ``PeerCredentialsError`` with the `errno` when `getsockopt` fails (not a
    ///   socket, not a Unix socket, closed).
    public static func of(socket fd: Int32) throws -> PeerCredentials {
        var credentials = UCred()
        var length = socklen_t(MemoryLayout<UCred>.size)
        let result = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length)
        guard result == 0 else {
            let code = errno
            throw PeerCredentialsError(errno: code, message: "SO_PEERCRED on descriptor \(fd): \(String(cString: strerror(code)))")
        }
        guard length == socklen_t(MemoryLayout<UCred>.size) else {
            throw PeerCredentialsError(errno: 0, message: "SO_PEERCRED on descriptor \(fd) returned \(length) bytes")
        }
        return PeerCredentials(credentials)
    }
}

/// `getsockopt(SO_PEERCRED)` failed.
public struct PeerCredentialsError: Error, CustomStringConvertible, Sendable, Equatable {
    public var errno: Int32
    public var message: String
    public init(errno: Int32, message: String) {
        self.errno = errno
        self.message = message
    }
    public var description: String { message }
}

/// The program a process runs, from `/proc/PID/exe` (symlinks resolved by the kernel), or
/// nil when the process is gone or not ours to inspect. A program replaced or deleted since
/// the process started is reported by its old path (the kernel's ` (deleted)` is dropped),
/// so an app updated in place is still recognised.
///
/// ```swift
/// executablePath(ofProcess: getpid())   // "/usr/local/bin/ferryd"
/// ```
public func executablePath(ofProcess pid: Int32) -> String? {
    guard pid > 0 else { return nil }
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    let path = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let deleted = " (deleted)"
    return path.hasSuffix(deleted) ? String(path.dropLast(deleted.count)) : path
}

/// The arguments a process was started with (`/proc/PID/cmdline`), or nil when it is gone.
/// A process can rewrite these: use them to recognise, never to authorise more than its uid.
func commandLine(ofProcess pid: Int32) -> [String]? {
    guard pid > 0, let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty else { return nil }
    return data.split(separator: 0, omittingEmptySubsequences: false).dropLast(data.last == 0 ? 1 : 0)
        .map { String(decoding: $0, as: UTF8.self) }
}

/// The current directory of a process (`/proc/PID/cwd`), to resolve a script it was started
/// with by a relative path.
func currentDirectory(ofProcess pid: Int32) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/\(pid)/cwd", &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
