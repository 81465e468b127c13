public import NIOCore

/// Writes each outbound payload as one frame: its length as 4 bytes big-endian, then the bytes.
///
/// The counterpart of ``FrameDecoder``; wrap it in a `MessageToByteHandler`. A payload that is
/// empty or larger than ``maximumFrameSize`` fails the write with a ``FerryProtocolError``
/// rather than sending a frame the peer would refuse.
///
/// ```swift
/// let frame = try FrameEncoder.frame(try MessageCoder().encode(ClientMessage.hello(hello)))
/// ```
public struct FrameEncoder: MessageToByteEncoder, Sendable {
    public typealias OutboundIn = ByteBuffer

    /// The largest payload written, in bytes; keep it equal to the peer's decoder limit.
    public let maximumFrameSize: Int

    public init(maximumFrameSize: Int = FrameDecoder.defaultMaximumFrameSize) {
        self.maximumFrameSize = maximumFrameSize
    }

    public func encode(data: ByteBuffer, out: inout ByteBuffer) throws {
        try Self.write(data, to: &out, maximumFrameSize: maximumFrameSize)
    }

    /// The framed bytes for one payload, for code that writes without a pipeline.
    public static func frame(
        _ payload: ByteBuffer,
        maximumFrameSize: Int = FrameDecoder.defaultMaximumFrameSize
    ) throws(FerryProtocolError) -> ByteBuffer {
        var out = ByteBuffer()
        out.reserveCapacity(FrameDecoder.lengthPrefixSize + payload.readableBytes)
        try write(payload, to: &out, maximumFrameSize: maximumFrameSize)
        return out
    }

    static func write(
        _ payload: ByteBuffer, to out: inout ByteBuffer, maximumFrameSize: Int
    ) throws(FerryProtocolError) {
        let length = payload.readableBytes
        guard length > 0 else {
            throw FerryProtocolError(.emptyFrame, "refusing to send an empty frame: every frame carries one JSON message")
        }
        guard length <= maximumFrameSize, length <= Int(UInt32.max) else {
            throw .frameTooLarge(length: UInt64(length), maximum: maximumFrameSize)
        }
        out.writeInteger(UInt32(length), endianness: .big)
        out.writeImmutableBuffer(payload)
    }
}
