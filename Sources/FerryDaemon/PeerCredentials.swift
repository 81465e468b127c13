#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore

/// Who is at the other end of a Unix socket, as the kernel says (`SO_PEERCRED`): the
/// process, user and group when it connected. ferryd trusts this, never `hello.pid`.
struct SocketPeer: Sendable, Hashable {
    var pid: Int32
    var uid: UInt32
    var gid: UInt32

    /// `struct ucred` of <sys/socket.h> (hidden from Swift without _GNU_SOURCE): same layout.
    struct Credentials {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// Reads `SO_PEERCRED` on the channel's socket (on its event loop).
    static func of(_ channel: any Channel) -> EventLoopFuture<SocketPeer> {
        channel.eventLoop.submit {
            guard let provider = channel as? any SocketOptionProvider else {
                throw DaemonError("the channel has no socket to ask for peer credentials")
            }
            return provider
        }.flatMap { (provider: any SocketOptionProvider) in
            provider.unsafeGetSocketOption(level: NIOBSDSocket.OptionLevel.socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
                .map { (credentials: Credentials) in SocketPeer(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid) }
        }
    }
}
