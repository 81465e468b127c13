import FerryEngine
import Foundation
import NIOCore
import NIOHTTP1

/// One kept-alive connection of a batch: sends the next item's GET once the previous
/// response has ended and writes each body into its item's file as it arrives, on the
/// connection's event loop (a 16 KiB write to the page cache is cheaper than a thread hop).
final class BatchConnection: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    /// The request in flight on this connection.
    private final class Exchange {
        let index: Int
        let startedAt: NIODeadline
        var lastActivity: NIODeadline
        /// A final response head arrived.
        var answered = false
        /// 2xx: where the body goes.
        var file: IncomingFile?
        /// Decided before the body ends (a status handed back, a write that failed).
        var outcome: BatchDownload.Outcome?
        /// A retryable status: ask again after this long instead of ending the item.
        var retryAfter: Duration?
        var expectations: [IntegrityCheck.Expectation] = []
        var digest = StreamingDigest(algorithms: [])
        var bytes: Int64 = 0

        init(index: Int, now: NIODeadline) {
            self.index = index
            startedAt = now
            lastActivity = now
        }
    }

    private let batch: BatchRun
    private let key: BatchRun.HostKey
    private var exchange: Exchange?
    private var keepAlive = true
    private var timer: Scheduled<Void>?
    private var lastError: (any Error)?

    init(batch: BatchRun, key: BatchRun.HostKey) {
        self.batch = batch
        self.key = key
    }

    func channelActive(context: ChannelHandlerContext) {
        if batch.opened(context.channel) {
            sendNext(context)
        } else {
            context.close(promise: nil)  // cancelled while connecting
        }
        context.fireChannelActive()
    }

    private func sendNext(_ context: ChannelHandlerContext) {
        guard let index = batch.next(key) else {
            context.close(promise: nil)
            return
        }
        let now = NIODeadline.now()
        exchange = Exchange(index: index, now: now)
        context.write(wrapOutboundOut(.head(batch.requestHead(index, key))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        armTimer(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let exchange else {
            // An answer nobody asked for: the connection cannot be trusted any more.
            lastError = FerryError(.badServerResponse, "the server sent a response to no request")
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard head.status.code >= 200 else { return }  // 1xx: the final answer follows
            exchange.answered = true
            exchange.lastActivity = .now()
            keepAlive = head.isKeepAlive
            begin(exchange, head)
        case .body(let buffer):
            exchange.lastActivity = .now()
            exchange.bytes += Int64(buffer.readableBytes)
            guard exchange.outcome == nil, let file = exchange.file else { return }
            do {
                try file.write(buffer)
                exchange.digest.update(buffer)
            } catch {
                file.discard()
                exchange.file = nil
                exchange.outcome = .failed(FerryError.from(error, url: batch.items[exchange.index].url))
            }
        case .end:
            self.exchange = nil
            timer?.cancel()
            if let delay = exchange.retryAfter {
                batch.retry(exchange.index, key, after: delay)
            } else {
                batch.finish(exchange.index, complete(exchange))
            }
            if keepAlive { sendNext(context) } else { context.close(promise: nil) }
        }
    }

    /// A final response head: a 2xx body goes to a file; a redirect (or a 206 nobody asked
    /// for) back to the caller; a retryable status is asked again later; any other is the answer.
    private func begin(_ exchange: Exchange, _ head: HTTPResponseHead) {
        let status = Int(head.status.code)
        if (300..<400).contains(status) || status == 206 {
            exchange.outcome = .handedBack("the server answered \(status)")
            return
        }
        guard (200..<300).contains(status) else {
            if let delay = batch.retryDelay(exchange.index, status: status, retryAfter: head.headers.first(name: "Retry-After")) {
                exchange.retryAfter = delay
            } else {
                exchange.outcome = .answered(status: status)
            }
            return
        }
        do {
            exchange.file = try IncomingFile(destination: batch.items[exchange.index].destination)
        } catch {
            exchange.outcome = .failed(FerryError.from(error, url: batch.items[exchange.index].url))
            return
        }
        // A whole 200 body is both the representation and the content: every digest applies.
        let digests = IntegrityCheck.serverDigests { head.headers.first(name: $0) }
        exchange.expectations = digests.wholeFile + digests.content
        if !exchange.expectations.isEmpty {
            exchange.digest = StreamingDigest(algorithms: Set(exchange.expectations.map(\.algorithm)))
        }
    }

    /// The body has ended: check the digests and give the file its name.
    private func complete(_ exchange: Exchange) -> BatchDownload.Outcome {
        if let outcome = exchange.outcome {
            exchange.file?.discard()
            return outcome
        }
        guard let file = exchange.file else { return .handedBack("no file was open for the body") }
        let url = batch.items[exchange.index].url
        do {
            try StreamingDigest.verify(exchange.expectations, against: exchange.digest.finalize(), url: url)
            try file.commit()
            return .saved(bytes: exchange.bytes)
        } catch {
            file.discard()
            return .failed(FerryError.from(error, url: url))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        lastError = error
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        batch.closed(context.channel)
        if let exchange {
            self.exchange = nil
            exchange.file?.discard()
            if batch.isCancelled {
                batch.finish(exchange.index, .failed(batch.cancellation(exchange.index)))
            } else if case .failed = exchange.outcome {
                batch.finish(exchange.index, exchange.outcome!)
            } else if !exchange.answered, batch.requeueOnce(exchange.index, key) {
                // Closed before any answer (a kept-alive connection the server had just
                // dropped): a GET is safe to send once more, on a new connection.
            } else {
                let why = lastError.map { FerryError.from($0, url: batch.items[exchange.index].url).message }
                batch.finish(exchange.index, .handedBack(why ?? "the connection closed before the response was complete"))
            }
        }
        batch.connectionEnded(key)
        context.fireChannelInactive()
    }

    /// One timer per request, at the earlier of the idle and the whole-request deadline;
    /// when it fires early (bytes kept arriving) it is set again for the new deadline.
    private func armTimer(_ context: ChannelHandlerContext) {
        guard let exchange else { return }
        var deadline = exchange.lastActivity + TimeAmount(batch.settings.idleTimeout)
        if let whole = batch.settings.resourceTimeout {
            deadline = min(deadline, exchange.startedAt + TimeAmount(whole))
        }
        let index = exchange.index
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            guard let current = self.exchange, current.index == index else { return }
            let now = NIODeadline.now()
            let idle = now - current.lastActivity >= TimeAmount(batch.settings.idleTimeout)
            let whole = batch.settings.resourceTimeout.map { now - current.startedAt >= TimeAmount($0) } ?? false
            guard idle || whole else {
                armTimer(context)
                return
            }
            self.exchange = nil
            current.file?.discard()
            let error = FerryError(.timedOut, idle ? "no byte arrived for \(batch.settings.idleTimeout)" : "the request took longer than allowed",
                                   url: batch.items[index].url)
            batch.finish(index, batch.settings.handsBackTimeouts ? .handedBack(error.message) : .failed(error))
            context.close(promise: nil)
        }
    }
}
