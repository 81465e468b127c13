import FerryCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// One request and its response on a ``PlainConnection``: the response head and body chunks
/// as the connection's handler reads them, and the two sides that may wait, the engine's task
/// (for the head, for the next chunk) and the event loop (when the body runs ahead of its
/// reader, reading pauses).
///
/// The handler hands over at the end of each read (`deliver`), not per part, so a head and
/// the body that came with it wake the reader once.
final class PlainExchange: Sendable {
    /// Reading pauses while this much body waits for its reader, and goes on below the low mark.
    static let pauseAbove = 512 * 1024
    static let resumeBelow = 128 * 1024

    private struct State {
        var head: HTTPResponseHead?
        var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
        var chunks = CircularBuffer<ByteBuffer>()
        var buffered = 0
        /// Set once: the response's end, or why there will be none.
        var end: Result<Void, any Error>?
        var bodyWaiter: CheckedContinuation<ByteBuffer?, any Error>?
        /// The handler held a read back because too much body waited.
        var readingPaused = false

        /// What a reader gets next, if anything is there: a chunk, or the end; with whether
        /// reading should go on (a paused body drained below the low mark).
        mutating func takeNext() -> (Result<ByteBuffer?, any Error>, resumeReading: Bool)? {
            if let chunk = chunks.popFirst() {
                buffered -= chunk.readableBytes
                let resume = readingPaused && buffered <= PlainExchange.resumeBelow
                if resume { readingPaused = false }
                return (.success(chunk), resume)
            }
            return end.map { ($0.map { nil }, false) }
        }
    }

    let connection: PlainConnection
    private let state = NIOLockedValueBox(State())

    init(connection: PlainConnection) {
        self.connection = connection
    }

    /// Sends the request and waits for the response's head. Cancelling closes the connection.
    func send(_ head: HTTPRequestHead) async throws -> HTTPResponseHead {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let failed = state.withLockedValue { state -> (any Error)? in
                    if case .failure(let error)? = state.end { return error }
                    state.headWaiter = continuation
                    return nil
                }
                if let failed { return continuation.resume(throwing: failed) }
                connection.onLoop { handler in handler.start(self, head: head) }
            }
        } onCancel: {
            fail(CancellationError())
        }
    }

    /// The next body chunk, nil at the body's end.
    func nextChunk() async throws -> ByteBuffer? {
        if case let (next, resume)? = state.withLockedValue({ $0.takeNext() }) {
            if resume { resumeReading() }
            return try next.get()
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLockedValue { state -> (Result<ByteBuffer?, any Error>, resumeReading: Bool)? in
                    if let ready = state.takeNext() { return ready }
                    state.bodyWaiter = continuation
                    return nil
                }
                if case let (next, resume)? = ready {
                    if resume { resumeReading() }
                    continuation.resume(with: next)
                }
            }
        } onCancel: {
            fail(CancellationError())
        }
    }

    /// A read held back for this reader goes out (on the connection's loop).
    private func resumeReading() {
        connection.onLoop { $0.resumeReading() }
    }

    // MARK: From the connection's handler, on its event loop

    func received(_ head: HTTPResponseHead) {
        state.withLockedValue { $0.head = head }
    }

    func received(_ chunk: ByteBuffer) {
        state.withLockedValue { state in
            state.chunks.append(chunk)
            state.buffered += chunk.readableBytes
        }
    }

    /// Whether the handler should hold its next read back (too much body waits).
    func shouldPauseReading() -> Bool {
        state.withLockedValue { state in
            if state.buffered > Self.pauseAbove { state.readingPaused = true }
            return state.readingPaused
        }
    }

    /// The response ended: true when this made the end, false when the reader had already
    /// given up (``fail(_:)``), whose connection is then closing and must not go back to the pool.
    /// Decided under the lock, so a reader giving up at the same moment is one or the other.
    func markEnded() -> Bool {
        state.withLockedValue { state in
            guard state.end == nil else { return false }
            state.end = .success(())
            return true
        }
    }

    /// Wakes whoever waits for what has arrived.
    func deliver() {
        let (headWaiter, head, bodyWaiter, body) = state.withLockedValue { state in
            var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
            if state.head != nil { swap(&headWaiter, &state.headWaiter) }
            var bodyWaiter: CheckedContinuation<ByteBuffer?, any Error>?
            var body: (Result<ByteBuffer?, any Error>, resumeReading: Bool)?
            if state.bodyWaiter != nil, let ready = state.takeNext() {
                body = ready
                swap(&bodyWaiter, &state.bodyWaiter)
            }
            return (headWaiter, state.head, bodyWaiter, body)
        }
        if let headWaiter, let head { headWaiter.resume(returning: head) }
        if let bodyWaiter, case let (next, resume)? = body {
            if resume { resumeReading() }
            bodyWaiter.resume(with: next)
        }
    }

    /// Ends the exchange with `error` unless it has ended; whoever waits gets it. A response
    /// not read to its end leaves its connection unusable, so it is closed.
    func fail(_ error: any Error) {
        let (wasOpen, headWaiter, bodyWaiter) = state.withLockedValue { state in
            let wasOpen = state.end == nil
            if wasOpen { state.end = .failure(error) }
            defer { (state.headWaiter, state.bodyWaiter) = (nil, nil) }
            return (wasOpen, state.headWaiter, state.bodyWaiter)
        }
        headWaiter?.resume(throwing: error)
        bodyWaiter?.resume(throwing: error)
        if wasOpen { connection.channel.close(promise: nil) }
    }
}

/// The body of a plain response, as AsyncHTTPClient's response carries it. Dropped before
/// its end (the engine stopped reading), it closes the connection.
final class PlainResponseBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let exchange: PlainExchange

    init(exchange: PlainExchange) {
        self.exchange = exchange
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: PlainResponseBody
        func next() async throws -> ByteBuffer? { try await body.exchange.nextChunk() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }

    deinit {
        exchange.fail(CancellationError())
    }
}

/// Takes an exchange's response on its connection's event loop instead of leaving it to a
/// reader in a Swift task (a transfer carried on the loop, ``LoopTransfer``). Called on the
/// loop only; after the head it gets exactly one of the body's end or the exchange's failure,
/// unless it handed the response over or abandoned it.
protocol PlainResponseReceiver: AnyObject {
    /// The response's head: keep its body here, leave the rest of the response to the
    /// exchange's reader (as ``PlainExchange/send(_:)`` would have had it), or close it with an error.
    func receive(head: HTTPResponseHead) -> PlainHeadDecision
    /// A part of the body. Throwing ends the exchange (the connection closes); the error is the
    /// receiver's to report.
    func receive(body: ByteBuffer) throws
    /// The body ended; the connection is back in the pool.
    func responseEnded()
    /// The exchange failed or was stopped before the body's end.
    func exchangeFailed(_ error: any Error)
}

enum PlainHeadDecision {
    case takeBody
    case handOver
    /// The response is not wanted: the connection closes; the receiver has reported why.
    case abandon(any Error)
}

/// Runs a ``PlainConnection``'s exchanges, one at a time, on its event loop: sends each
/// request, hands the response to its ``PlainExchange``, gives the connection back to the
/// pool at the response's end (or closes it), holds reads back while the reader is behind,
/// and closes the connection once it has been idle for the pool's time-out.
final class PlainConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    struct Settings: Sendable {
        var idleTimeout: TimeAmount
        /// Takes the connection out of the pool's idle list for closing; false when a request
        /// has just taken it (it is then left open for that request).
        var withdrawIdle: @Sendable (ObjectIdentifier) -> Bool
    }

    private let settings: Settings
    private var context: ChannelHandlerContext?
    private var exchange: PlainExchange?
    /// Who takes the current exchange's response here, if anyone (``PlainResponseReceiver``).
    private var receiver: (any PlainResponseReceiver)?
    /// Both sides allow the connection to be used again.
    private var keepAlive = true
    /// A read held back for the reader.
    private var readPending = false
    private var lastUsed = NIODeadline.now()
    private var idleTimer: Scheduled<Void>?

    init(settings: Settings) {
        self.settings = settings
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        self.context = nil
    }

    /// Sends `head` for `exchange` (the connection has no other in progress); its response goes
    /// to `receiver` when there is one.
    func start(_ exchange: PlainExchange, head: HTTPRequestHead, receiver: (any PlainResponseReceiver)? = nil) {
        guard let context, context.channel.isActive, self.exchange == nil else {
            exchange.fail(ChannelError.ioOnClosedChannel)
            receiver?.exchangeFailed(ChannelError.ioOnClosedChannel)
            return
        }
        self.exchange = exchange
        self.receiver = receiver
        keepAlive = head.isKeepAlive
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: sent)
        sent.futureResult.assumeIsolated().whenFailure { [weak self] error in self?.end(with: error) }
        resumeReading()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let exchange else {
            // Bytes nobody asked for: the connection cannot be trusted with a next request.
            return context.close(promise: nil)
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepAlive = keepAlive && head.isKeepAlive
            if let receiver {
                // Not ours while it decides: what it does (dropping a handed-over response
                // closes the connection) may come back here, and must not reach it again.
                self.receiver = nil
                switch receiver.receive(head: head) {
                case .takeBody:
                    self.receiver = receiver
                    return
                case .handOver: break
                case .abandon(let error):
                    self.exchange = nil
                    return exchange.fail(error)
                }
            }
            exchange.received(head)
        case .body(let chunk):
            guard let receiver else { return exchange.received(chunk) }
            do {
                try receiver.receive(body: chunk)
            } catch {
                self.receiver = nil
                self.exchange = nil
                exchange.fail(error)
            }
        case .end:
            self.exchange = nil
            let receiver = self.receiver
            self.receiver = nil
            lastUsed = .now()
            // Back in the pool before the reader hears of the end, so that its next request
            // finds the connection there; not when the reader gave up first (it is closing).
            let ended = exchange.markEnded()
            if ended && keepAlive {
                if idleTimer == nil { armIdleTimer(in: settings.idleTimeout) }
                exchange.connection.release()
            } else {
                context.close(promise: nil)
            }
            guard let receiver else { return exchange.deliver() }
            if ended { receiver.responseEnded() } else { receiver.exchangeFailed(CancellationError()) }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if receiver == nil { exchange?.deliver() }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if let exchange, exchange.shouldPauseReading() {
            readPending = true
        } else {
            context.read()
        }
    }

    /// The reader caught up (or a new exchange began): a held-back read goes out.
    func resumeReading() {
        guard readPending, let context else { return }
        readPending = false
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        end(with: ChannelError.eof)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(with: error)
        context.close(promise: nil)
    }

    private func end(with error: any Error) {
        guard let exchange else { return }
        self.exchange = nil
        let receiver = self.receiver
        self.receiver = nil
        exchange.fail(error)
        receiver?.exchangeFailed(error)
    }

    private func armIdleTimer(in delay: TimeAmount) {
        guard let context else { return }
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [weak self] in
            self?.idleTimerFired()
        }
    }

    /// Closes the connection when idle long enough, else looks again when it could be. Armed
    /// when a response ends and none is pending, so a busy connection costs no timer per request;
    /// one in use when it fires is looked at again when its response ends.
    private func idleTimerFired() {
        idleTimer = nil
        guard let context, exchange == nil else { return }
        let idleFor = NIODeadline.now() - lastUsed
        if idleFor < settings.idleTimeout { return armIdleTimer(in: settings.idleTimeout - idleFor) }
        if settings.withdrawIdle(ObjectIdentifier(context.channel)) { context.close(promise: nil) }
    }
}
