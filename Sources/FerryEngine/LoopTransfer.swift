import FerryCore
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// A session's plain download carried on its connection's event loop, from the request to the
/// body's end, without a Swift task: the request goes out on an idle kept-alive connection, the
/// handler that reads the response writes the body into the file as it reads it, and the task
/// is told at the end (``LoopOutcome``).
///
/// Why: for a small file, the run's Swift task, the hops between the loop and Swift's threads,
/// and the engine's asynchronous layers (attempt, request, body) cost more CPU than the
/// transfer; a session of many small downloads ran at 0.6–0.7 of curl's rate on two cores
/// (docs/benchmarks.md, "twelfth").
///
/// One implementation of the rules: whatever needs more than a `2xx`-like answer written to a
/// file (a redirect, a `401`, a status the retry policy retries, a coded body, the server's
/// digests, a delegate that decides on the response, any failure other than a stop) goes on in
/// a task, through the engine's usual path, from this first request (``FirstRequest``): the
/// response whose head arrived, with its body still on the connection, or the failure for the
/// retry rules. Which transfers qualify: ``TransferEngine/loopTransfer(_:turn:observer:ended:)``.
package final class LoopTransfer: Sendable {
    fileprivate let engine: TransferEngine
    fileprivate let transfer: Transfer
    fileprivate let turn: TransferTurn
    fileprivate let observer: any TransferObserver
    fileprivate let exchange: PlainExchange
    /// The task's file, opened before the request goes out (one that cannot be opened is the
    /// task path's to report); its handler's to write and close from then on.
    fileprivate let output: OutputFile
    private let head: HTTPRequestHead
    /// Told once, then dropped: whoever it holds (the run's handle, which holds ``stop()``)
    /// must not keep this transfer alive after its end.
    private let ended: Mutex<(@Sendable (LoopOutcome) -> Void)?>
    /// Set once by ``stop()``: the exchange's failure that follows is a stop's.
    private let stopped = Atomic<Bool>(false)

    fileprivate init(
        engine: TransferEngine, transfer: Transfer, output: OutputFile, turn: TransferTurn, observer: any TransferObserver,
        connection: PlainConnection, head: HTTPRequestHead, ended: @escaping @Sendable (LoopOutcome) -> Void
    ) {
        self.engine = engine
        self.transfer = transfer
        self.output = output
        self.turn = turn
        self.observer = observer
        self.exchange = PlainExchange(connection: connection)
        self.head = head
        self.ended = Mutex(ended)
    }

    fileprivate var url: URL { transfer.request.url }
    fileprivate var progress: TransferProgress { turn.watch.progress }

    /// Sends the request. The turn's time-outs stop it from now on.
    package func begin() {
        turn.watch.stop(with: { [weak self] in self?.stop() })
        // Stopped before it began (the run's handle was stopped already): the connection closed.
        guard !isStopped else {
            output.close()
            return finish(.stopped(stopError))
        }
        var transaction = TransactionMetrics(request: transfer.request, isProxyConnection: false)
        transaction.requestStartDate = transaction.fetchStartDate
        transaction.connection = exchange.connection.use(reused: true)
        progress.touch()
        engine.logger.debug("request", metadata: ["method": "GET", "url": "\(url.redactedForLogs)", "on": "loop"])
        let (exchange, head) = (self.exchange, self.head)
        exchange.connection.onLoop { [self, transaction] handler in
            handler.start(exchange, head: head, receiver: LoopDownload(self, transaction: transaction))
        }
    }

    /// Stops the transfer (a cancel, a suspend, a time-out): the connection closes, and the
    /// run ends with the time-out's error or cancellation's. After a hand-over, the response's
    /// reader fails the same way.
    package func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        exchange.fail(CancellationError())
    }

    fileprivate var isStopped: Bool { stopped.load(ordering: .relaxed) }

    fileprivate var stopError: FerryError { turn.watch.timedOut ?? FerryError.from(CancellationError(), url: url) }

    /// Tells the outcome, once (a second call does nothing); an end here gives the host's slot
    /// back and ends the watch, a hand-over leaves both to the task's run.
    fileprivate func finish(_ outcome: LoopOutcome) {
        guard let ended = ended.withLock({ ended in
            defer { ended = nil }
            return ended
        }) else { return }
        switch outcome {
        case .finished, .stopped:
            engine.limiter.release(host: turn.host)
            turn.finish()
        case .continueInTask:
            break
        }
        ended(outcome)
    }

    /// The largest body written on the loop. A larger one, or one of unknown length, goes on in
    /// a task: the loop carries other connections, which must not wait behind the disk.
    static let largestBodyOnLoop: Int64 = 1 << 20

    /// Whether a response needs the engine's task path: it is not a small final answer to write
    /// into the file as it comes (the rules are `send` and `receiveBody`'s, in
    /// TransferEngine+Attempt). Cookies to keep go there too: a session's jar may write its file.
    fileprivate func needsTask(_ response: Response, _ head: HTTPResponseHead) -> Bool {
        (response.isRedirect && head.headers.contains(name: "Location")) || response.statusCode == 401
            || transfer.retry.retryableStatuses.contains(response.statusCode) || response.isContentCoded
            || !(0...Self.largestBodyOnLoop).contains(response.expectedContentLength)
            || head.headers.contains(name: "Repr-Digest") || head.headers.contains(name: "Content-Digest")
            || (transfer.request.handlesCookies && transfer.cookies != nil && head.headers.contains(name: "Set-Cookie"))
    }
}

/// How a ``LoopTransfer`` ended; told once, on the connection's loop (on the caller's thread
/// for one stopped before it began).
package enum LoopOutcome: Sendable {
    /// The transfer ended there.
    case finished(TransferResult)
    /// Stopped (a cancel, a suspend, a time-out): the run ends with this error.
    case stopped(FerryError)
    /// The rest needs the engine's path in a task: ``TransferEngine/run(_:turn:observer:first:cancellingWith:)``
    /// goes on from this first request.
    case continueInTask(FirstRequest)
}

/// A transfer's first request, sent on its connection's loop, as the task that goes on finds it.
package struct FirstRequest: Sendable {
    enum Outcome: Sendable {
        /// The response's head came (its body is still to read from the connection), timed so
        /// far by `transaction`, which names the connection.
        case response(HTTPClientResponse, transaction: TransactionMetrics)
        /// It failed (its metrics were reported); whether a response head had come, and the
        /// validator of what the file holds, for the retry rules.
        case failed(FerryError, responseArrived: Bool, validator: String?)
    }
    let outcome: Outcome
}

/// The loop side of a ``LoopTransfer``: what `send` and `receiveBody` do for a plain download,
/// done as the connection's handler reads. Lives on the connection's event loop.
private final class LoopDownload: PlainResponseReceiver {
    private let transfer: LoopTransfer
    private var transaction: TransactionMetrics
    private var response: Response?
    private var validator: String?
    /// Set once the body is taken here.
    private var count: BodyCount?

    init(_ transfer: LoopTransfer, transaction: TransactionMetrics) {
        self.transfer = transfer
        self.transaction = transaction
    }

    func receive(head: HTTPResponseHead) -> PlainHeadDecision {
        // Stopped as the head came: the exchange has failed, and its close is on its way.
        guard !transfer.isStopped else {
            stopped()
            return .abandon(CancellationError())
        }
        let response = Response(head, url: transfer.url)
        self.response = response
        transaction.responseStarted(response)
        transfer.progress.touch()
        guard !transfer.needsTask(response, head) else { return handOver(head) }
        switch transfer.observer.transferDidReceiveAtOnce(response: response) {
        case nil:
            return handOver(head)
        case false?:
            let refused = FerryError(.cancelledByDelegate, "the delegate cancelled the task on its response", url: transfer.url)
            fail(refused)
            return .abandon(refused)
        case true?:
            break
        }
        do {
            try transfer.output.truncate(to: 0)  // a full body: the file starts over
        } catch {
            fail(error)
            return .abandon(error)
        }
        validator = TransferEngine.validator(of: response)
        count = BodyCount(response, method: "GET")
        transfer.observer.transferDidResume(atOffset: 0, expectedTotal: response.expectedContentLength)
        transfer.progress.startWriting(from: 0, expected: response.expectedContentLength)
        return .takeBody
    }

    /// The rest of the response goes to the task's run, which reads its body from the connection.
    private func handOver(_ head: HTTPResponseHead) -> PlainHeadDecision {
        transfer.output.close()  // the task's `send` opens the file for itself
        let body = HTTPClientResponse(
            version: head.version, status: head.status, headers: head.headers, body: .stream(PlainResponseBody(exchange: transfer.exchange)))
        transfer.finish(.continueInTask(FirstRequest(outcome: .response(body, transaction: transaction))))
        return .handOver
    }

    func receive(body: ByteBuffer) throws {
        guard !transfer.isStopped else {
            stopped()
            throw CancellationError()
        }
        do {
            try transfer.output.append(body)
        } catch {
            fail(error)
            throw error
        }
        count?.received += Int64(body.readableBytes)
        transfer.progress.didWrite(body.readableBytes)
    }

    func responseEnded() {
        if let shortfall = count?.shortfall(url: transfer.url) { return fail(shortfall) }
        transfer.progress.didWrite(0, final: true)
        let size = transfer.output.size
        transfer.output.close()
        transaction.countOfResponseBodyBytesReceived = size
        report()
        let result = TransferResult(
            response: response!, body: nil, bytesReceived: size, bytesSent: transfer.progress.totals.0, validator: validator, requestCount: 1)
        transfer.finish(.finished(result))
    }

    func exchangeFailed(_ error: any Error) {
        guard transfer.isStopped else { return fail(error) }
        stopped()
    }

    /// Stopped (a cancel, a suspend, a time-out): the run ends with the stop's error.
    private func stopped() {
        transfer.output.close()
        report()
        transfer.finish(.stopped(transfer.stopError))
    }

    /// The request failed: the task's run decides with the retry rules, as for a failure there.
    private func fail(_ error: any Error) {
        transfer.output.close()
        let mapped = count?.failure(error, url: transfer.url) ?? FerryError.from(error, url: transfer.url)
        report()
        transfer.finish(.continueInTask(FirstRequest(outcome: .failed(mapped, responseArrived: response != nil, validator: validator))))
    }

    /// The request's metrics, once it ended.
    private func report() {
        transaction.responseEndDate = Date()
        transfer.observer.transferDidFinish(transaction: transaction)
    }
}

extension TransferEngine {
    /// A ``LoopTransfer`` for `transfer`, whose `turn` came, when it can be carried on its
    /// connection's loop: a plain `http` `GET` into a new file (not a resumed one), without an
    /// expected digest or a proxy, with an idle connection to its origin at hand. nil otherwise:
    /// the caller runs it in a task as usual. `ended` is told once, on the connection's loop;
    /// call ``LoopTransfer/begin()`` after making ``LoopTransfer/stop()`` reachable.
    package func loopTransfer(
        _ transfer: Transfer, turn: TransferTurn, observer: any TransferObserver, ended: @escaping @Sendable (LoopOutcome) -> Void
    ) -> LoopTransfer? {
        let request = transfer.request
        guard request.method == "GET", request.body == nil, transfer.upload == nil, request.expectedSHA256 == nil,
            request.url.scheme?.lowercased() == "http", case .file(let file, nil) = transfer.destination, transfer.proxies?.server(for: request.url) == nil,
            let outgoing = try? makeClientRequest(request, upload: nil, for: transfer, progress: turn.watch.progress),
            let plain = PlainRequest(outgoing, proxied: false),
            let output = try? OutputFile(url: file)
        else { return nil }
        guard let connection = plainConnections.idleConnection(to: plain.origin) else {
            output.close()
            return nil
        }
        return LoopTransfer(
            engine: self, transfer: transfer, output: output, turn: turn, observer: observer, connection: connection, head: plain.head, ended: ended)
    }
}
