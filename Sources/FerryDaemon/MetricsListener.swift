public import NIOCore
import NIOHTTP1
import NIOPosix
public import ServiceLifecycle

/// `GET /metrics` on a local TCP address, for a Prometheus server that scrapes over HTTP:
/// the text `ferry daemon metrics` prints (``DaemonMetrics``). Off unless asked for
/// (`ferryd --metrics-address 127.0.0.1:9464`); it serves nothing else (404), reads nothing
/// but `GET` and `HEAD` (405), and closes each connection after its answer.
///
/// ```swift
/// let metrics = try await MetricsListener.bind(daemon: daemon, host: "127.0.0.1", port: 9464)
/// let services = daemon.services() + [metrics]   // in ferryd's service group
/// ```
public struct MetricsListener: Service {
    let daemon: Daemon
    let channel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
    /// The address it listens on (port 0 picks one).
    public let address: SocketAddress

    public static func bind(daemon: Daemon, host: String, port: Int) async throws -> MetricsListener {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { child in
                child.eventLoop.makeCompletedFuture {
                    // A client that sends no whole request within 10 s is closed: a stalled
                    // scraper must not hold a descriptor, or ferryd's shutdown.
                    try child.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(10)))
                    try child.pipeline.syncOperations.addHandler(CloseOnIdle())
                    try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: child)
                }
            }
        guard let address = channel.channel.localAddress else { throw ChannelError.inappropriateOperationForState }
        return MetricsListener(daemon: daemon, channel: channel, address: address)
    }

    public func run() async {
        // Until ferryd shuts down: then the listening socket closes, the connections still
        // open are cancelled (their reads end), and the group ends. The listener's own errors
        // (cancellation at shutdown among them) end it quietly: metrics are no reason to stop ferryd.
        do {
            try await serveUntilShutdown()
        } catch is CancellationError {
        } catch {
            daemon.logger.warning("the metrics listener stopped", metadata: ["error": "\(error)"])
        }
    }

    private func serveUntilShutdown() async throws {
        try await withGracefulShutdownHandler {
            try await cancelWhenGracefulShutdown {
                try await withThrowingDiscardingTaskGroup { group in
                    try await channel.executeThenClose { connections in
                        for try await connection in connections {
                            group.addTask { await serve(connection) }
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            channel.channel.close(promise: nil)
        }
    }

    /// One request, one answer, then the connection closes.
    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            for try await part in inbound {
                switch part {
                case .head(let request): head = request
                case .body: continue
                case .end:
                    guard let head else { return }
                    let (status, text) = await answer(head)
                    var headers = HTTPHeaders()
                    headers.add(name: "Content-Type", value: status == .ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8")
                    headers.add(name: "Content-Length", value: "\(text.utf8.count)")
                    headers.add(name: "Connection", value: "close")
                    try await outbound.write(.head(HTTPResponseHead(version: head.version, status: status, headers: headers)))
                    if head.method != .HEAD { try await outbound.write(.body(.byteBuffer(ByteBuffer(string: text)))) }
                    try await outbound.write(.end(nil))
                    return
                }
            }
        }
    }

    private func answer(_ head: HTTPRequestHead) async -> (HTTPResponseStatus, String) {
        guard head.method == .GET || head.method == .HEAD else { return (.methodNotAllowed, "only GET and HEAD\n") }
        guard head.uri == "/metrics" || head.uri.hasPrefix("/metrics?") else { return (.notFound, "ferryd serves /metrics only\n") }
        do {
            return (.ok, try await daemon.metricsText())
        } catch {
            return (.internalServerError, "ferryd cannot read its figures: \(error)\n")
        }
    }
}

/// Closes a metrics connection that went silent (`IdleStateHandler`'s read time-out).
private final class CloseOnIdle: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
