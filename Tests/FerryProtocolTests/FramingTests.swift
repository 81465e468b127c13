import FerryProtocol
import NIOCore
import NIOEmbedded
import Testing

@Suite("Frames on a channel")
struct FramingTests {
    func decoderChannel(maximumFrameSize: Int = FrameDecoder.defaultMaximumFrameSize) -> EmbeddedChannel {
        EmbeddedChannel(handler: ByteToMessageHandler(FrameDecoder(maximumFrameSize: maximumFrameSize)))
    }

    func frame(_ text: String) throws -> ByteBuffer { try FrameEncoder.frame(ByteBuffer(string: text)) }

    func readAll(_ channel: EmbeddedChannel) throws -> [String] {
        var frames: [String] = []
        for _ in 0..<10_000 {
            guard let frame = try channel.readInbound(as: ByteBuffer.self) else { break }
            frames.append(String(buffer: frame))
        }
        return frames
    }

    @Test("a frame is a 4-byte big-endian length and the payload")
    func layout() throws {
        let framed = try frame("hi!")
        #expect(Array(framed.readableBytesView) == [0, 0, 0, 3, 0x68, 0x69, 0x21])
    }

    @Test("a frame split across reads, down to one byte at a time, comes out whole")
    func splitAcrossReads() throws {
        let channel = decoderChannel()
        var bytes = try frame(#"{"type":"hello"}"#)
        bytes.writeImmutableBuffer(try frame("second"))
        for _ in 0..<bytes.readableBytes {
            let one = bytes.readSlice(length: 1)!
            try channel.writeInbound(one)
        }
        #expect(try readAll(channel) == [#"{"type":"hello"}"#, "second"])
        #expect(try channel.finish().isClean)
    }

    @Test("a length prefix split in the middle waits for the rest")
    func splitPrefix() throws {
        let channel = decoderChannel()
        var bytes = try frame("abcdef")
        try channel.writeInbound(bytes.readSlice(length: 2)!)
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        try channel.writeInbound(bytes.readSlice(length: 4)!)
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        try channel.writeInbound(bytes)
        #expect(try readAll(channel) == ["abcdef"])
    }

    @Test("several frames in one read come out one by one, in order")
    func severalInOneRead() throws {
        let channel = decoderChannel()
        var bytes = ByteBuffer()
        let payloads = (1...50).map { "message \($0) " + String(repeating: "x", count: $0 * 7) }
        for payload in payloads { bytes.writeImmutableBuffer(try frame(payload)) }
        try channel.writeInbound(bytes)
        #expect(try readAll(channel) == payloads)
    }

    @Test("a frame of exactly the maximum size passes; one byte more is refused before its payload arrives")
    func maximumSize() throws {
        let channel = decoderChannel(maximumFrameSize: 1_000)
        try channel.writeInbound(try FrameEncoder.frame(ByteBuffer(repeating: 0x41, count: 1_000), maximumFrameSize: 1_000))
        #expect(try channel.readInbound(as: ByteBuffer.self)?.readableBytes == 1_000)

        let refusing = decoderChannel(maximumFrameSize: 1_000)
        var prefixOnly = ByteBuffer()
        prefixOnly.writeInteger(UInt32(1_001))
        let error = #expect(throws: FerryProtocolError.self) { try refusing.writeInbound(prefixOnly) }
        #expect(error?.code == .frameTooLarge)
        #expect(error?.message.contains("1001") == true)
        _ = try? refusing.finish()
    }

    @Test("huge and 'negative' length prefixes are refused at once", arguments: [UInt32(1 << 20) + 1, UInt32(Int32.max), UInt32(0x8000_0000), UInt32.max])
    func hugeLength(_ length: UInt32) throws {
        let channel = decoderChannel()
        var bytes = ByteBuffer()
        bytes.writeInteger(length)
        bytes.writeString("{}")
        let error = #expect(throws: FerryProtocolError.self) { try channel.writeInbound(bytes) }
        #expect(error?.code == .frameTooLarge)
        _ = try? channel.finish()
    }

    @Test("after a bad prefix the decoder passes nothing more on, even valid frames")
    func stopsAfterError() throws {
        let channel = decoderChannel()
        var bad = ByteBuffer()
        bad.writeInteger(UInt32.max)
        #expect(throws: FerryProtocolError.self) { try channel.writeInbound(bad) }
        _ = try? channel.writeInbound(try frame(#"{"type":"hello"}"#))
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        _ = try? channel.finish()
    }

    @Test("a zero length is refused")
    func zeroLength() throws {
        let channel = decoderChannel()
        var bytes = ByteBuffer()
        bytes.writeInteger(UInt32(0))
        let error = #expect(throws: FerryProtocolError.self) { try channel.writeInbound(bytes) }
        #expect(error?.code == .emptyFrame)
        _ = try? channel.finish()
    }

    @Test("a frame cut off by the end of the stream is an error")
    func truncatedAtEOF() throws {
        let channel = decoderChannel()
        var bytes = try frame("complete")
        var partial = try frame("cut short")
        bytes.writeImmutableBuffer(partial.readSlice(length: 6)!)
        try channel.writeInbound(bytes)
        #expect(try readAll(channel) == ["complete"])
        let error = #expect(throws: FerryProtocolError.self) { try channel.finish() }
        #expect(error?.code == .truncatedFrame)
        #expect(error?.message.contains("6 bytes") == true)
    }

    @Test("the encoder frames outbound payloads and refuses empty or oversized ones")
    func encoder() throws {
        let channel = EmbeddedChannel(handler: MessageToByteHandler(FrameEncoder(maximumFrameSize: 16)))
        try channel.writeOutbound(ByteBuffer(string: "payload"))
        var out = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(out.readInteger(as: UInt32.self) == 7)
        #expect(String(buffer: out) == "payload")

        #expect(throws: FerryProtocolError.self) { try channel.writeOutbound(ByteBuffer(repeating: 1, count: 17)) }
        #expect(throws: FerryProtocolError.self) { try FrameEncoder.frame(ByteBuffer()) }
        _ = try? channel.finish()
    }

    @Test("nextFrame consumes nothing until a frame is whole")
    func nextFrameWithoutPipeline() throws {
        var buffer = try frame("abc")
        var partial = buffer.getSlice(at: 0, length: 5)!
        #expect(try FrameDecoder.nextFrame(from: &partial) == nil)
        #expect(partial.readableBytes == 5)
        #expect(try FrameDecoder.nextFrame(from: &buffer).map { String(buffer: $0) } == "abc")
        #expect(buffer.readableBytes == 0)
    }
}
