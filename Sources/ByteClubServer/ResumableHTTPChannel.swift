import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOResumableUpload
import Synchronization

/// Hummingbird's HTTP/1 child channel with swift-nio-extras' `HTTPResumableUploadHandler` in
/// it, so that every upload route also speaks the IETF resumable-upload draft.
///
/// `HTTPResumableUploadHandler` ends the connection's pipeline: it turns each request (a plain
/// one, or a resumable upload that may span several connections) into a *child channel* of
/// its own. Each child is wrapped in a `NIOAsyncChannel` and handed to Hummingbird's usual
/// request loop, so routes see an ordinary request whose body continues after a resumption.
///
/// ```
/// TCP ─ [faults] ─ HTTP/1 codec ─ HTTP1ToHTTPServerCodec ─ QuiesceHandler ─ ExpectContinueHandler ─ HTTPResumableUploadHandler
///                                                                                               └─ per request: child channel ─ CloseGuard ─ NIOAsyncChannel → router
/// ```
struct ResumableHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    struct Connection: ServerChildChannelValue {
        let channel: any Channel
        let requests: AsyncStream<NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>>
    }

    let responder: HTTPChannelHandler.Responder
    let uploads: ResumableUploads
    let maxHeaderBytes: Int
    let faults: FaultState
    let connections: OpenConnections
    let closedInputs: ClosedInputs

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection> {
        channel.eventLoop.makeCompletedFuture {
            let (requests, continuation) = AsyncStream.makeStream(of: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>.self)
            let sync = channel.pipeline.syncOperations
            connections.add(channel)
            try sync.addHandler(InputClosedHandler(inputs: closedInputs))
            // Reads of up to 256 KiB instead of NIO's 64 KiB: a 1 GiB upload took 16,900 reads,
            // each a hop to the request's task and a write(2); now about 4,000 (measured with
            // strace; Benchmarks/byteclub-bench.sh). Queued bodies stay bounded by the request
            // channel's back-pressure (at most 10 reads).
            try channel.syncOptions?.setOption(
                ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 64 << 10, maximum: 256 << 10))
            if let faults = faults.faults, faults != FaultInjection() {
                try sync.addHandler(FaultChannelHandler(faults: faults, drops: self.faults.dropsConnection(self.faults.nextConnection())))
            }
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = maxHeaderBytes
            limits.maxHeaderListSize = maxHeaderBytes
            // Pipelining assistance holds the next request back until the answer before it has
            // ended: each request is served by a task of its own (below), and a client that sends
            // the next one as soon as the last body byte arrived (by Content-Length) could
            // otherwise get a second answer started before the first's end was written — NIO's
            // error handler stops the process on that (KeepAliveTests).
            try sync.configureHTTPServerPipeline(
                withPipeliningAssistance: true, withErrorHandling: true, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try sync.addHandler(QuiesceHandler())
            try sync.addHandler(ExpectContinueHandler())
            try sync.addHandler(HTTPResumableUploadHandler(context: uploads.context()) { child in
                do {
                    try child.pipeline.syncOperations.addHandler(CloseGuard())
                    let wrapped = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                        wrappingChannelSynchronously: child, configuration: .init(isOutboundHalfClosureEnabled: true))
                    continuation.yield(wrapped)
                } catch {
                    logger.error("could not set up a request channel: \(error)")
                    child.close(promise: nil)
                }
            })
            channel.closeFuture.whenComplete { _ in continuation.finish() }
            return Connection(channel: channel, requests: requests)
        }
    }

    /// Serves each request channel with Hummingbird's request loop; returns when the connection
    /// closed and every request it started (a resumable upload may outlive it) has finished.
    func handle(value: Connection, logger: Logger) async {
        await withDiscardingTaskGroup { group in
            for await request in value.requests {
                group.addTask { await self.handleHTTP(asyncChannel: request, logger: logger) }
            }
        }
    }
}

/// The resumable-upload context, made once the server knows its own address (the `Location`
/// of an upload resource is absolute).
final class ResumableUploads: Sendable {
    private let shared = Mutex<HTTPResumableUploadContext?>(nil)
    let timeout: TimeAmount

    init(timeoutSeconds: Double) {
        timeout = .milliseconds(Int64(timeoutSeconds * 1000))
    }

    func start(origin: String) {
        shared.withLock { $0 = HTTPResumableUploadContext(origin: origin, path: "/resumable_upload/", timeout: timeout) }
    }

    func context() -> HTTPResumableUploadContext {
        shared.withLock { context in
            if let context { return context }
            let made = HTTPResumableUploadContext(origin: "http://127.0.0.1", path: "/resumable_upload/", timeout: timeout)
            context = made
            return made
        }
    }
}

/// Sits first in a request channel. The channel type forbids closing its input and leaves a
/// close promise unanswered once it has ended; Hummingbird's loop does both (input on
/// cancellation, a last close after the request). This turns them into closes it supports.
final class CloseGuard: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard context.channel.isActive else {
            promise?.succeed()
            return
        }
        switch mode {
        case .output:
            context.close(mode: .output, promise: nil)
            promise?.succeed()
        case .input, .all:
            context.close(mode: .all, promise: nil)
            if let promise { context.channel.closeFuture.cascade(to: promise) }
        }
    }
}
