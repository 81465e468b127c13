import FerryProtocol
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// What a connection waits for: the handshake answer and the reply to each request id.
/// Shared by the channel handler (which completes) and the connection (which registers),
/// so it sits behind a lock.
final class ConnectionState: Sendable {
    private struct Waiting {
        var handshake: EventLoopPromise<DaemonMessage>?
        var replies: [UInt64: EventLoopPromise<Reply>] = [:]
        var nextRequestID: UInt64 = 1
        var closed = false
    }
    private let waiting = NIOLockedValueBox(Waiting())
    let pushed: AsyncStream<DaemonMessage>
    private let pushedContinuation: AsyncStream<DaemonMessage>.Continuation
    /// Events and progress reports received (what ferryd's pacing counts).
    let eventsAndProgressReceived = Atomic<Int>(0)
    /// Body bytes of the data events among them.
    let bodyBytesReceived = Atomic<Int>(0)

    init() {
        (pushed, pushedContinuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    func expectHandshake(on eventLoop: any EventLoop) -> EventLoopFuture<DaemonMessage> {
        let promise = eventLoop.makePromise(of: DaemonMessage.self)
        waiting.withLockedValue { $0.handshake = promise }
        return promise.futureResult
    }

    func register(on eventLoop: any EventLoop) -> (UInt64, EventLoopPromise<Reply>) {
        let promise = eventLoop.makePromise(of: Reply.self)
        let (id, closed) = waiting.withLockedValue { w -> (UInt64, Bool) in
            let id = w.nextRequestID
            w.nextRequestID += 1
            if !w.closed { w.replies[id] = promise }
            return (id, w.closed)
        }
        if closed { promise.fail(DaemonConnectionError.connectionLost("the connection to ferryd is closed")) }
        return (id, promise)
    }

    func complete(id: UInt64, with result: Result<Reply, any Error>) {
        let promise = waiting.withLockedValue { $0.replies.removeValue(forKey: id) }
        promise?.completeWith(result)
    }

    /// Fails whichever request owns `future` (a time-out).
    func fail(future: EventLoopFuture<Reply>, with error: DaemonConnectionError) {
        let promise = waiting.withLockedValue { w -> EventLoopPromise<Reply>? in
            guard let entry = w.replies.first(where: { $0.value.futureResult === future }) else { return nil }
            return w.replies.removeValue(forKey: entry.key)
        }
        promise?.fail(error)
    }

    func received(_ message: DaemonMessage) {
        switch message {
        case .welcome, .refused:
            let promise = waiting.withLockedValue { w in defer { w.handshake = nil }; return w.handshake }
            promise?.succeed(message)
        case .reply(let id, let reply):
            complete(id: id, with: .success(reply))
        case .failure(let id, let error):
            complete(id: id, with: .failure(DaemonConnectionError.failure(error)))
        case .event, .progress:
            eventsAndProgressReceived.add(1, ordering: .relaxed)
            if case .event(let event) = message, case .data(let bytes) = event.kind { bodyBytesReceived.add(bytes.count, ordering: .relaxed) }
            pushedContinuation.yield(message)
        case .waitingForConnectivity, .eventsFinished, .eventsWaiting, .goodbye, .challenge:
            pushedContinuation.yield(message)
        }
    }

    /// The socket closed: nothing more will be answered.
    func closed(reason: String) {
        let (handshake, replies) = waiting.withLockedValue { w in
            w.closed = true
            defer { w.handshake = nil; w.replies = [:] }
            return (w.handshake, Array(w.replies.values))
        }
        handshake?.fail(DaemonConnectionError.connectionLost(reason))
        for promise in replies { promise.fail(DaemonConnectionError.connectionLost(reason)) }
        pushedContinuation.finish()
    }
}

/// Decodes each frame into a `DaemonMessage` and hands it to the connection's state. A
/// message that does not decode ends the connection: the peer is not a ferryd we understand.
final class DaemonMessageHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    private let state: ConnectionState

    init(state: ConnectionState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = unwrapInboundIn(data)
        do {
            state.received(try MessageCoder().decode(DaemonMessage.self, from: payload))
        } catch {
            state.closed(reason: "ferryd sent an unreadable message: \(error.message)")
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        state.closed(reason: "\(error)")
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        state.closed(reason: "ferryd closed the connection")
        context.fireChannelInactive()
    }
}
