import Crypto
import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// A TLS handshake of the engine's own, before a session's first request to a host, to show
/// the server's certificates to the session's delegate: AsyncHTTPClient's connections have no
/// hook where the chain could be shown and a verdict given. Two handshakes: one under the
/// standard rules for the verdict, one accepting anything for the chain as sent.
enum ServerTrustProbe {
    static let timeout: TimeAmount = .seconds(15)

    /// The chain `host:port` (of `url`) presents and the standard verdict on it under `configuration`.
    static func probe(_ url: URL, host: String, port: Int, configuration: TLSConfiguration) async throws -> ServerTrust {
        // SNI carries names only; NIOSSL checks an address literal against the peer's address.
        let serverName = isAddressLiteral(host) ? nil : host
        let standard = try NIOSSLContext(configuration: configuration)
        var anything = configuration
        anything.certificateVerification = .none
        let capturing = try NIOSSLContext(configuration: anything)
        let chain = NIOLockedValueBox<[NIOSSLCertificate]>([])
        try await handshake(host: host, port: port, serverName: serverName, context: capturing) { certificates in
            chain.withLockedValue { $0 = certificates }
        }
        var failure: String?
        do {
            try await handshake(host: host, port: port, serverName: serverName, context: standard, capture: nil)
        } catch let error as NIOSSLError {
            failure = FerryError.tlsFailure(error, url: url).message
        } catch let error as NIOSSLExtraError {
            failure = "the certificate does not name \(host) (\(error))"
        }
        let certificates = chain.withLockedValue { $0 }
        return ServerTrust(
            host: host, port: port,
            certificates: certificates.compactMap { try? Data($0.toDERBytes()) },
            publicKeySHA256: certificates.compactMap { certificate in
                (try? certificate.extractPublicKey().toSPKIBytes()).map { Data(SHA256.hash(data: $0)).base64EncodedString() }
            },
            isTrustedByDefault: failure == nil, defaultFailure: failure)
    }

    static func isAddressLiteral(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: 0)) != nil
    }

    /// Connects, shakes hands (handing the peer's chain to `capture` when given, which then
    /// stands in for verification), and closes.
    private static func handshake(
        host: String, port: Int, serverName: String?, context: NIOSSLContext,
        capture: (@Sendable ([NIOSSLCertificate]) -> Void)?
    ) async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let done = loop.makePromise(of: Void.self)
        let timer = loop.scheduleTask(in: timeout) { done.fail(ChannelError.connectTimeout(timeout)) }
        defer { timer.cancel() }
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let tls: NIOSSLClientHandler
                        if let capture {
                            tls = try NIOSSLClientHandler(context: context, serverHostname: serverName) { certificates, verdict in
                                capture(certificates)
                                verdict.succeed(.certificateVerified)
                            }
                        } else {
                            tls = try NIOSSLClientHandler(context: context, serverHostname: serverName)
                        }
                        try channel.pipeline.syncOperations.addHandlers(tls, HandshakeWaiter(done: done))
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            done.fail(error)  // a promise left unfulfilled traps in NIO's debug builds
            throw error
        }
        do {
            try await done.futureResult.get()
        } catch {
            try? await channel.close()
            throw error
        }
        try? await channel.close()
    }

    /// Completes `done` when the handshake ends, either way.
    private final class HandshakeWaiter: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let done: EventLoopPromise<Void>

        init(done: EventLoopPromise<Void>) { self.done = done }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent { done.succeed() }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            done.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            done.fail(ChannelError.eof)
            context.fireChannelInactive()
        }
    }
}
