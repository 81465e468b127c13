public import Hummingbird
public import NIOCore

/// The request context of every route: Hummingbird's core storage (logger with the request
/// id) plus the client's address, which request bins record and rate limits count by.
public struct ByteClubContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's address; for a resumed upload, that of the connection that started it.
    public let remoteAddress: SocketAddress?
    /// The request's channel, to tell whether its client is still there (a long-poll).
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channel = source.channel
    }

    /// Bodies are streamed by the routes themselves, each with its own bound.
    public var maxUploadSize: Int { 64 << 20 }

    /// The client address as text, without the port ("127.0.0.1").
    var clientAddress: String {
        remoteAddress?.ipAddress ?? "unknown"
    }
}
