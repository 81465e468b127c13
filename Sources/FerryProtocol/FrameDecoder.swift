public import NIOCore

/// Splits a byte stream into frames: a 4-byte big-endian length, then that many bytes of payload.
///
/// Put it first in the pipeline, wrapped in a `ByteToMessageHandler`; each frame's payload is
/// passed on as a `ByteBuffer` (decode it with ``MessageCoder``). A length of zero or above
/// ``maximumFrameSize`` is an error: the handler fires it and stops decoding, and the owner of
/// the channel closes the connection. Nothing past the bad prefix is buffered.
///
/// ```swift
/// try channel.pipeline.syncOperations.addHandlers(
///     ByteToMessageHandler(FrameDecoder()),
///     MessageToByteHandler(FrameEncoder()))
/// ```
public struct FrameDecoder: ByteToMessageDecoder, Sendable {
    public typealias InboundOut = ByteBuffer

    /// 1 MiB: the largest payload a peer may send unless both sides agree on another limit.
    public static let defaultMaximumFrameSize = 1 << 20
    /// The size of the length prefix, in bytes.
    public static let lengthPrefixSize = 4

    /// The largest payload accepted, in bytes.
    public let maximumFrameSize: Int

    public init(maximumFrameSize: Int = FrameDecoder.defaultMaximumFrameSize) {
        self.maximumFrameSize = maximumFrameSize
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let payload = try Self.nextFrame(from: &buffer, maximumFrameSize: maximumFrameSize) else {
            return .needMoreData
        }
        context.fireChannelRead(Self.wrapInboundOut(payload))
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        // Whole frames still buffered are delivered; a partial one at the end of the stream
        // is an error, not silence.
        let state = try decode(context: context, buffer: &buffer)
        if state == .needMoreData, seenEOF, buffer.readableBytes > 0 {
            let left = buffer.readableBytes
            buffer.moveReaderIndex(forwardBy: left)
            throw FerryProtocolError(
                .truncatedFrame, "the stream ended in the middle of a frame (\(left) bytes of it arrived)")
        }
        return state
    }

    /// Takes one whole frame's payload off the front of `buffer`, or returns nil and consumes
    /// nothing when the frame is not complete yet. The same rules as the channel handler, for
    /// code that reads frames without a pipeline.
    ///
    /// - Throws: ``FerryProtocolError/Code/emptyFrame`` or ``FerryProtocolError/Code/frameTooLarge``
    ///   as soon as the length prefix is readable, before waiting for the payload.
    public static func nextFrame(
        from buffer: inout ByteBuffer,
        maximumFrameSize: Int = FrameDecoder.defaultMaximumFrameSize
    ) throws(FerryProtocolError) -> ByteBuffer? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return nil
        }
        guard length > 0 else {
            throw FerryProtocolError(.emptyFrame, "a frame announced a length of 0; every frame carries one JSON message")
        }
        guard UInt64(length) <= UInt64(max(maximumFrameSize, 0)) else {
            throw .frameTooLarge(length: UInt64(length), maximum: maximumFrameSize)
        }
        guard buffer.readableBytes >= lengthPrefixSize + Int(length) else { return nil }
        buffer.moveReaderIndex(forwardBy: lengthPrefixSize)
        return buffer.readSlice(length: Int(length))
    }
}

extension FerryProtocolError {
    static func frameTooLarge(length: UInt64, maximum: Int) -> FerryProtocolError {
        FerryProtocolError(
            .frameTooLarge,
            "a frame announced \(length) bytes, more than the maximum of \(maximum): "
                + "the peer is not speaking the Ferry protocol, or a message should be split")
    }
}
