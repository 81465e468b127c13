import NIOCore
import NIOHTTPTypes

/// Closes a connection when the server shuts down gracefully (`ChannelShouldQuiesceEvent`): at
/// once when no request on it is in progress (an idle keep-alive connection), otherwise right
/// after the response to the last request in progress has been written.
///
/// Hummingbird's `HTTPConnectionStateHandler` does the same, but it does not pass
/// `channelInactive` on (Hummingbird 2.28.1, `HTTPConnectionStateHandler.swift:57`), and the
/// `HTTPResumableUploadHandler` after it ends a request's child channel only on
/// `channelInactive`. With it, every keep-alive connection that had served a request left its
/// child channel, and Hummingbird's request loop reading it, waiting after the connection
/// closed: a graceful shutdown then waited out its whole grace period.
///
/// Valid transitions (`inProgress`: request heads read minus response ends written):
/// - serving, quiesce with `inProgress == 0` → close now
/// - serving, quiesce with `inProgress > 0` → draining
/// - draining, response end written leaving `inProgress == 0` → close after that write
final class QuiesceHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var inProgress = 0
    private var draining = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { inProgress += 1 }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        inProgress = max(0, inProgress - 1)
        if draining && inProgress == 0 {
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
        } else {
            context.write(data, promise: promise)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if inProgress == 0 {
            context.close(promise: nil)
        } else {
            draining = true
        }
    }
}
