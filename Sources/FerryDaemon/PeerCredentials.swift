#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import FerryApps
import NIOCore

extension PeerCredentials {
    /// The credentials of the peer of the channel's Unix socket (`SO_PEERCRED`), read on its
    /// event loop. ferryd trusts this, never `hello.pid`.
    static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        channel.eventLoop.submit {
            guard let provider = channel as? any SocketOptionProvider else {
                throw DaemonError("the channel has no socket to ask for peer credentials")
            }
            return provider
        }.flatMap { (provider: any SocketOptionProvider) in
            provider.unsafeGetSocketOption(level: NIOBSDSocket.OptionLevel.socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
                .map { (credentials: PeerCredentials.UCred) in PeerCredentials(credentials) }
        }
    }
}
