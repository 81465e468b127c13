import NIOCore

/// The byte-level half of ``FaultInjection``, first in a connection's pipeline: drops the
/// connection after N bytes (either direction), stalls the response once, or throttles it.
/// Writes are queued and released in order; their promises complete when they really go out.
final class FaultChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let faults: FaultInjection
    private let drops: Bool
    private var seen: Int64 = 0
    private var sent: Int64 = 0
    private var stalled = false
    private var dropped = false
    private var queue = CircularBuffer<(IOData, EventLoopPromise<Void>?)>()
    private var flushPending = false
    private var nextSend = NIODeadline.now()
    private var wakeup: Scheduled<Void>?

    init(faults: FaultInjection, drops: Bool) {
        self.faults = faults
        self.drops = drops
    }

    private var dropLimit: Int64? { drops ? faults.dropAfterBytes : nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !dropped else { return }
        var buffer = unwrapInboundIn(data)
        if let limit = dropLimit, seen + Int64(buffer.readableBytes) >= limit {
            let allowed = Int(max(0, limit - seen))
            if allowed > 0, let slice = buffer.readSlice(length: allowed) {
                context.fireChannelRead(wrapInboundOut(slice))
            }
            drop(context)
            return
        }
        seen += Int64(buffer.readableBytes)
        context.fireChannelRead(wrapInboundOut(buffer))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !dropped else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        queue.append((unwrapOutboundIn(data), promise))
    }

    func flush(context: ChannelHandlerContext) {
        flushPending = true
        pump(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        wakeup?.cancel()
        failQueue()
        context.fireChannelInactive()
    }

    private func failQueue() {
        while let (_, promise) = queue.popFirst() { promise?.fail(ChannelError.ioOnClosedChannel) }
    }

    private func drop(_ context: ChannelHandlerContext) {
        guard !dropped else { return }
        dropped = true
        failQueue()
        context.flush()
        context.close(promise: nil)
    }

    private func pump(_ context: ChannelHandlerContext) {
        while let (data, promise) = queue.first {
            guard !dropped else { return }
            let now = NIODeadline.now()
            if now < nextSend {
                if wakeup == nil {
                    wakeup = context.eventLoop.assumeIsolated().scheduleTask(deadline: nextSend) {
                        self.wakeup = nil
                        self.pump(context)
                    }
                }
                context.flush()
                return
            }
            guard case .byteBuffer(var buffer) = data else {
                queue.removeFirst()
                context.write(wrapOutboundOut(data), promise: promise)
                continue
            }
            // Stall once, after `stallAfterBytes` of response.
            if let stallAt = faults.stallAfterBytes, !stalled, sent + Int64(buffer.readableBytes) > stallAt {
                let first = Int(max(0, stallAt - sent))
                if first > 0, let slice = buffer.readSlice(length: first) {
                    emit(context, slice, promise: nil)
                    queue[queue.startIndex] = (.byteBuffer(buffer), promise)
                }
                stalled = true
                nextSend = now + .milliseconds(Int64(faults.stallSeconds * 1000))
                continue
            }
            // Throttle: chunks of a twentieth of the rate, each followed by its share of a second.
            var chunk = buffer
            var chunkPromise = promise
            if let rate = faults.throttleBytesPerSecond, rate > 0 {
                let size = max(1, rate / 20)
                if buffer.readableBytes > size, let slice = buffer.readSlice(length: size) {
                    chunk = slice
                    chunkPromise = nil
                    queue[queue.startIndex] = (.byteBuffer(buffer), promise)
                } else {
                    queue.removeFirst()
                }
                nextSend = now + .nanoseconds(Int64(chunk.readableBytes) * 1_000_000_000 / Int64(rate))
            } else {
                queue.removeFirst()
            }
            if let limit = dropLimit, seen + Int64(chunk.readableBytes) >= limit {
                let allowed = Int(max(0, limit - seen))
                if allowed > 0, let slice = chunk.readSlice(length: allowed) { emit(context, slice, promise: nil) }
                chunkPromise?.fail(ChannelError.ioOnClosedChannel)
                drop(context)
                return
            }
            emit(context, chunk, promise: chunkPromise)
            if faults.throttleBytesPerSecond != nil { context.flush() }
        }
        if flushPending {
            flushPending = false
            context.flush()
        }
    }

    private func emit(_ context: ChannelHandlerContext, _ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
        seen += Int64(buffer.readableBytes)
        sent += Int64(buffer.readableBytes)
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
