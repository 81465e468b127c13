import NIOCore
import Synchronization

/// Connections whose client has closed its side (a FIN). The server lets clients half-close
/// (Hummingbird's `allowRemoteHalfClosure`), so such a connection stays open until its answer
/// is written; a long-poll that sees its connection here stops waiting instead of holding a
/// waiter's place until its timeout.
final class ClosedInputs: Sendable {
    private let closed = Mutex<Set<ObjectIdentifier>>([])

    func insert(_ channel: any Channel) { _ = closed.withLock { $0.insert(ObjectIdentifier(channel)) } }
    func remove(_ channel: any Channel) { _ = closed.withLock { $0.remove(ObjectIdentifier(channel)) } }

    /// Whether the client of the request on `channel` (a request's child channel, whose parent
    /// is the TCP connection) has gone: the request or its connection is closed, or the
    /// client closed its side.
    func clientGone(_ channel: any Channel) -> Bool {
        guard channel.isActive, let connection = channel.parent, connection.isActive else { return true }
        let key = ObjectIdentifier(connection)
        return closed.withLock { $0.contains(key) }
    }
}

/// First in a connection's pipeline: notes in ``ClosedInputs`` when the client closes its side.
final class InputClosedHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let inputs: ClosedInputs

    init(inputs: ClosedInputs) {
        self.inputs = inputs
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { inputs.insert(context.channel) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        inputs.remove(context.channel)
        context.fireChannelInactive()
    }
}
