import FerryApps
import FerryProtocol
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// One client on ferryd's socket: how to write to it, who it is, and the bounds on what it
/// may send ahead and leave unread.
///
/// Writes go through `send`, from any thread, in call order. A client that does not read
/// cannot make ferryd buffer without end: its input is read only while its answers drain
/// (``InboundFlow``), and when more than `maximumOutboundBytes` wait to be written, or the
/// socket stays full for `stallTimeout`, the connection is closed with a logged reason (a
/// live `progress` is simply dropped while the socket is full).
final class ClientConnection: Sendable {
    let id: UInt64
    let peer: PeerCredentials
    let channel: any Channel
    let logger: Logger
    let maximumOutboundBytes: Int
    private let coder = MessageCoder()
    private struct Outbound {
        var pendingBytes = 0
        var closing = false
        var hello: Hello?
        /// Waiting for `pendingBytes` to fall to their limit, or the connection to close.
        var drainWaiters: [(limit: Int, waiter: CheckedContinuation<Void, Never>)] = []

        /// The waiters whose limit is reached (all of them once closing), taken out.
        mutating func drained() -> [CheckedContinuation<Void, Never>] {
            let ready = drainWaiters.filter { closing || pendingBytes <= $0.limit }
            drainWaiters.removeAll { closing || pendingBytes <= $0.limit }
            return ready.map(\.waiter)
        }
    }
    private let outbound = NIOLockedValueBox(Outbound())
    /// Paced sessions' counts (``EventPacing``); in its own lock, as the outbox reserves under its own.
    let pacing = NIOLockedValueBox(Pacing())
    private let inbound: NIOLockedValueBox<InboundFlow>

    init(
        id: UInt64, peer: PeerCredentials, channel: any Channel, maximumOutboundBytes: Int, maximumRequestsInFlight: Int,
        logger: Logger
    ) {
        self.id = id
        self.peer = peer
        self.channel = channel
        self.maximumOutboundBytes = maximumOutboundBytes
        self.inbound = NIOLockedValueBox(InboundFlow(maximumInFlight: maximumRequestsInFlight))
        var logger = logger
        logger[metadataKey: "connection"] = "\(id)"
        logger[metadataKey: "peer-pid"] = "\(peer.pid)"
        self.logger = logger
    }

    /// The client's hello, once the handshake is done (for logs and status).
    var hello: Hello? {
        get { outbound.withLockedValue { $0.hello } }
        set { outbound.withLockedValue { $0.hello = newValue } }
    }

    var isClosing: Bool { outbound.withLockedValue { $0.closing } }

    /// Bytes handed to ``send(_:droppable:)`` and not yet written to the socket.
    var pendingOutboundBytes: Int { outbound.withLockedValue { $0.pendingBytes } }

    /// Returns once at most `limit` bytes wait to be written (or the connection is closing):
    /// a sender of many events keeps below `maximumOutboundBytes`, the mark of a client that
    /// does not read.
    func drained(to limit: Int) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = outbound.withLockedValue { state -> Bool in
                if state.closing || state.pendingBytes <= limit { return true }
                state.drainWaiters.append((limit, waiter))
                return false
            }
            if now { waiter.resume() }
        }
    }

    /// Requests read from this client and not answered yet.
    var requestsInFlight: Int { inbound.withLockedValue { $0.inFlight } }

    /// `count` requests of this client were read and handed to the daemon.
    func arrived(_ count: Int) {
        inbound.withLockedValue { $0.arrived(count) }
    }

    /// `count` requests of this client were answered: reading may go on (from any thread).
    func served(_ count: Int) {
        if inbound.withLockedValue({ $0.served(count) }) == .read { channel.read() }
    }

    /// NIO wants to read the socket: whether it may (``InboundFlow``).
    func mayRead() -> Bool {
        inbound.withLockedValue { $0.readRequested() } == .read
    }

    /// The socket's write buffer crossed a water mark: whether a held read may go on now.
    func writabilityChanged(_ writable: Bool) -> Bool {
        inbound.withLockedValue { $0.writabilityChanged(writable) } == .read
    }

    /// Queues `message`. Returns false when it was not sent (the connection is closing, or
    /// a droppable message met a full socket).
    @discardableResult
    func send(_ message: DaemonMessage, droppable: Bool = false) -> Bool {
        send([message], droppable: droppable) == 1
    }

    /// Queues `messages` in order, with one hop to the channel's event loop and one flush (a
    /// hop per message woke the loop once per reply: 256 answers were 256 wake-ups and 256
    /// writes). Returns how many were queued: all but those after the first that could not
    /// be (the connection is closing, or a droppable message met a full socket); a message
    /// that cannot be encoded is logged and skipped.
    @discardableResult
    func send(_ messages: [DaemonMessage], droppable: Bool = false) -> Int {
        var payloads: [ByteBuffer] = []
        payloads.reserveCapacity(messages.count)
        for message in messages {
            do {
                payloads.append(try coder.encode(message))
            } catch {
                logger.error("cannot encode a message", metadata: ["type": "\(message.typeName)", "error": "\(error.shortDescription)"])
            }
        }
        return send(encoded: payloads, droppable: droppable) == payloads.count ? messages.count : 0
    }

    /// Queues message payloads already encoded (events made from their stored JSON), as
    /// ``send(_:droppable:)`` does. Returns how many were queued (all or none).
    @discardableResult
    func send(encoded payloads: [ByteBuffer], droppable: Bool = false) -> Int {
        let size = payloads.reduce(0) { $0 + $1.readableBytes + FrameDecoder.lengthPrefixSize }
        guard !payloads.isEmpty else { return 0 }
        if droppable, !channel.isWritable { return 0 }
        let overflow: Bool? = outbound.withLockedValue { state in
            if state.closing { return nil }
            state.pendingBytes += size
            return state.pendingBytes > maximumOutboundBytes
        }
        guard let overflow else { return 0 }
        if overflow {
            close(reason: "the client is not reading: more than \(maximumOutboundBytes) bytes wait for it", goodbye: nil)
            return 0
        }
        let channel = self.channel
        let write: @Sendable () -> Void = { [outbound, payloads, size] in
            // Written in order; the last write's completion means all of them went (or failed).
            let written = channel.eventLoop.makePromise(of: Void.self)
            for payload in payloads.dropLast() { channel.write(payload, promise: nil) }
            channel.writeAndFlush(payloads[payloads.count - 1], promise: written)
            written.futureResult.whenComplete { _ in
                let ready = outbound.withLockedValue { state in
                    state.pendingBytes -= size
                    return state.drained()
                }
                for waiter in ready { waiter.resume() }
            }
        }
        // On the loop already (a job queued there, as live events are): written now, so it
        // stays ahead of whatever was queued after that job (a reply the actor sent since).
        if channel.eventLoop.inEventLoop { write() } else { channel.eventLoop.execute(write) }
        return payloads.count
    }

    /// Sends `goodbye` (when given and the socket can still take it) and closes. Logs why.
    /// Turned away: ferryd is stopping (a connection that arrives during the stop).
    func closeBecauseStopping() {
        close(reason: "ferryd is stopping", goodbye: FerryProtocolError(.internalError, "ferryd is stopping"))
    }

    func close(reason: String, goodbye: FerryProtocolError?) {
        close(reason: reason, last: goodbye.map { DaemonMessage.goodbye($0) })
    }

    /// Sends `last` (a `refused` or `goodbye`, when the socket can still take it), then closes.
    func close(reason: String, last: DaemonMessage?) {
        let (first, waiting) = outbound.withLockedValue { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            let first = !state.closing
            state.closing = true
            return (first, state.drained())
        }
        for waiter in waiting { waiter.resume() }
        endPacing()
        guard first else { return }
        logger.notice("closing connection", metadata: ["reason": "\(reason)"])
        if let last, channel.isWritable, let payload = try? coder.encode(last) {
            channel.writeAndFlush(payload).whenComplete { [channel] _ in channel.close(promise: nil) }
        } else {
            channel.close(promise: nil)
        }
    }
}

/// Reads frames from one client: the handshake rules (``ConnectionStateMachine``), then its
/// requests in order, one at a time, to the daemon. It holds the socket's reads while the
/// client is ahead (``InboundFlow``), closes a connection that says no hello within
/// `handshakeTimeout`, and asks the daemon about one that stayed silent (`IdleStateHandler`).
final class ConnectionHandler: ChannelDuplexHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Limits: Sendable {
        var stallTimeout: TimeAmount
        var handshakeTimeout: TimeAmount
    }

    let connection: ClientConnection
    let daemon: Daemon
    let limits: Limits
    private let machine: NIOLockedValueBox<ConnectionStateMachine>
    private let requests = RequestQueue()
    /// Requests decoded from one read, handed over together at `channelReadComplete`.
    private let arrived = NIOLockedValueBox<[(id: UInt64, request: Request)]>([])
    private let stallTimer = NIOLockedValueBox<Scheduled<Void>?>(nil)
    private let handshakeTimer = NIOLockedValueBox<Scheduled<Void>?>(nil)

    /// `refusing`: the answer to this connection's hello when ferryd cannot take it (`busy`).
    init(connection: ClientConnection, daemon: Daemon, daemonVersion: String, limits: Limits, refusing: FerryProtocolError? = nil) {
        self.connection = connection
        self.daemon = daemon
        self.limits = limits
        self.machine = NIOLockedValueBox(ConnectionStateMachine(daemonVersion: daemonVersion, refusing: refusing))
        // Requests of one connection are served in order: an acknowledge sent after an
        // attach is handled after it. Those waiting when the daemon gets to them come as one
        // batch (submissions in it share a transaction; ``RequestQueue``).
        daemon.schedule(.serve(connection, requests))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let timer = context.eventLoop.scheduleTask(in: limits.handshakeTimeout) { [connection, machine, limits] in
            guard machine.withLockedValue({ $0.peer == nil && !$0.isClosed }) else { return }
            let seconds = limits.handshakeTimeout.nanoseconds / 1_000_000_000
            connection.close(
                reason: "no hello within \(seconds) s",
                last: .refused(FerryProtocolError(.handshakeRequired, "no hello within \(seconds) s of connecting")))
        }
        handshakeTimer.withLockedValue { $0 = timer }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = unwrapInboundIn(data)
        let action: ConnectionStateMachine.Action
        do {
            let message = try MessageCoder().decode(ClientMessage.self, from: payload)
            action = machine.withLockedValue { $0.received(message) }
            if case .hello(let hello) = message, case .reply = action {
                connection.hello = hello
                handshakeTimer.withLockedValue { $0?.cancel(); $0 = nil }
            }
        } catch {
            action = machine.withLockedValue { $0.failed(error) }
        }
        perform(action)
    }

    private func perform(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .reply(let message):
            connection.send(message)
        case .handle(let id, .taken(let taken)):
            // Answered here, at once: it only opens the session's window, and waiting behind
            // this connection's earlier requests (an acknowledgement's commit) held back the
            // events it lets through.
            do throws(FerryProtocolError) {
                try Request.taken(taken).validate()
                connection.took(taken.count, of: taken.sessionIdentifier)
                connection.send(.reply(id: id, .taken(taken)))
            } catch {
                connection.send(.failure(id: id, error))
            }
        case .handle(let id, let request):
            arrived.withLockedValue { $0.append((id, request)) }
        case .close(let last):
            let reason: String
            switch last {
            case .refused(let error), .goodbye(let error): reason = error.shortDescription
            default: reason = last.typeName
            }
            connection.close(reason: "protocol: \(reason)", last: last)
        case .ignore:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushArrived()
        context.fireChannelReadComplete()
    }

    private func flushArrived() {
        let batch = arrived.withLockedValue { arrived -> [(id: UInt64, request: Request)] in
            defer { arrived = [] }
            return arrived
        }
        guard !batch.isEmpty else { return }
        connection.arrived(batch.count)
        requests.add(batch)
    }

    /// Reads only while the client is not ahead of its answers (``InboundFlow``).
    func read(context: ChannelHandlerContext) {
        if connection.mayRead() { context.read() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            daemon.schedule(.idleCheck(connection))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? FerryProtocolError {
            perform(machine.withLockedValue { $0.failed(error) })
        } else {
            connection.close(reason: "socket error: \(error)", goodbye: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        flushArrived()
        stallTimer.withLockedValue { $0?.cancel() }
        handshakeTimer.withLockedValue { $0?.cancel() }
        requests.finish()
        connection.endPacing()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        if writable {
            stallTimer.withLockedValue { $0?.cancel(); $0 = nil }
        } else {
            let timer = context.eventLoop.scheduleTask(in: limits.stallTimeout) { [connection, limits] in
                if !connection.channel.isWritable {
                    connection.close(reason: "the client is not reading: its socket stayed full for \(limits.stallTimeout)", goodbye: nil)
                }
            }
            stallTimer.withLockedValue { $0?.cancel(); $0 = timer }
        }
        if connection.writabilityChanged(writable) { context.read() }
        context.fireChannelWritabilityChanged()
    }
}
