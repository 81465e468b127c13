import FerryProtocol
import NIOCore
import NIOEmbedded
import Testing

/// SplitMix64: a fixed seed gives the same bytes on every run and machine.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Random input is an error, never a crash")
struct FuzzTests {
    let coder = MessageCoder()

    /// What a daemon connection does with inbound bytes: frames, then messages.
    /// Returns how many messages decoded and how many errors were seen.
    func feed(_ chunks: [ByteBuffer]) -> (messages: Int, errors: Int) {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(FrameDecoder(maximumFrameSize: 4_096)))
        defer { _ = try? channel.finish() }
        var messages = 0
        var errors = 0
        for chunk in chunks {
            do {
                try channel.writeInbound(chunk)
            } catch is FerryProtocolError {
                errors += 1
                return (messages, errors)  // the daemon closes the connection here
            } catch {
                Issue.record("unexpected error type: \(error)")
                return (messages, errors + 1)
            }
            while let frame = try? channel.readInbound(as: ByteBuffer.self) {
                // Both directions: a daemon reads client messages, a client reads the daemon's.
                do {
                    _ = try coder.decode(ClientMessage.self, from: frame)
                    messages += 1
                } catch {
                    errors += 1
                }
                do {
                    _ = try coder.decode(DaemonMessage.self, from: frame)
                    messages += 1
                } catch {
                    errors += 1
                }
            }
        }
        return (messages, errors)
    }

    @Test("random byte streams, cut at random places")
    func randomStreams() {
        var random = SeededGenerator(seed: 0xFE22_7001)
        var errors = 0
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...96, using: &random)
            var bytes = ByteBuffer(bytes: (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            var chunks: [ByteBuffer] = []
            while bytes.readableBytes > 0 {
                chunks.append(bytes.readSlice(length: Int.random(in: 1...max(1, bytes.readableBytes), using: &random))!)
            }
            errors += feed(chunks).errors
        }
        #expect(errors > 1_000)
    }

    @Test("well-framed random payloads, and valid messages with random bytes changed or cut")
    func randomPayloads() throws {
        var random = SeededGenerator(seed: 42)
        let valid = try Fixtures.clientMessages.map { Array(try coder.encode($0).readableBytesView) }
            + Fixtures.daemonMessages.map { Array(try coder.encode($0).readableBytesView) }
        var decoded = 0
        for round in 0..<3_000 {
            var payload: [UInt8]
            if round % 3 == 0 {
                payload = (0..<Int.random(in: 1...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                payload = valid[Int.random(in: 0..<valid.count, using: &random)]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let index = Int.random(in: 0..<payload.count, using: &random)
                    payload[index] = round % 3 == 1 ? UInt8.random(in: 0...255, using: &random) : Array("{}[]\",:0a".utf8).randomElement(using: &random)!
                }
                if round % 5 == 0 { payload = Array(payload.prefix(Int.random(in: 1...payload.count, using: &random))) }
            }
            let framed = try FrameEncoder.frame(ByteBuffer(bytes: payload))
            decoded += feed([framed]).messages
        }
        // Some mutations land in string contents and still decode; most do not.
        #expect(decoded < 3_000)
        #expect(decoded > 0)
    }
}
