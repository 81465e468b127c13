// Deterministic pseudo-random content that the test servers stream and tests verify.
public import NIOCore
import Crypto

/// Deterministic bytes for tests: the same `count` and `seed` always give the same bytes.
///
/// The generator is counter based (SplitMix64 over the 8-byte block index), so any byte
/// range can be produced without generating what comes before it. `TestHTTPServer` serves
/// `GET /bytes/<n>?seed=S` from it in chunks, never holding the whole body.
///
/// ```swift
/// let expected = TestContent.sha256Hex(count: 1 << 20, seed: 7)
/// // download http://127.0.0.1:PORT/bytes/1048576?seed=7 and compare its SHA-256
/// ```
public enum TestContent {
    /// The first `count` bytes of the stream for `seed`.
    public static func bytes(count: Int, seed: UInt64) -> [UInt8] {
        precondition(count >= 0, "count must not be negative")
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0, offset: 0, seed: seed) }
        return out
    }

    /// `count` bytes of the stream for `seed` starting at byte `offset`.
    ///
    /// ```swift
    /// let tail = TestContent.bytes(offset: 100, count: 10, seed: 1) // bytes 100..<110
    /// ```
    public static func bytes(offset: Int, count: Int, seed: UInt64) -> [UInt8] {
        precondition(count >= 0 && offset >= 0, "offset and count must not be negative")
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0, offset: offset, seed: seed) }
        return out
    }

    /// The lower-case hex SHA-256 of `bytes(count:seed:)`, computed in 1 MiB chunks.
    public static func sha256Hex(count: Int, seed: UInt64) -> String {
        hex(sha256(count: count, seed: seed))
    }

    /// The raw SHA-256 of `bytes(count:seed:)` (32 bytes), computed in 1 MiB chunks.
    public static func sha256(count: Int, seed: UInt64) -> [UInt8] {
        var hasher = SHA256()
        let chunk = 1 << 20
        var scratch = [UInt8](repeating: 0, count: chunk)
        var offset = 0
        while offset < count {
            let n = min(chunk, count - offset)
            scratch.withUnsafeMutableBytes { buf in
                let slice = UnsafeMutableRawBufferPointer(rebasing: buf[0..<n])
                fill(slice, offset: offset, seed: seed)
                hasher.update(bufferPointer: UnsafeRawBufferPointer(slice))
            }
            offset += n
        }
        return Array(hasher.finalize())
    }

    /// The seed that `GET /bytes/<n>?seed=S&version=V` uses: `S` itself when `V` is 0,
    /// otherwise a mix of both, so a new version is new content.
    ///
    /// ```swift
    /// let v2 = TestContent.sha256Hex(count: 100, seed: TestContent.seed(5, version: 2))
    /// ```
    public static func seed(_ seed: UInt64, version: UInt64) -> UInt64 {
        version == 0 ? seed : splitmix(seed ^ (version &* 0xD1B5_4A32_D192_ED03))
    }

    /// Appends `count` bytes of the stream for `seed`, starting at `offset`, to `buffer`.
    public static func write(into buffer: inout ByteBuffer, offset: Int, count: Int, seed: UInt64) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            fill(UnsafeMutableRawBufferPointer(rebasing: raw[0..<count]), offset: offset, seed: seed)
            return count
        }
    }

    /// Fills `buffer` with the stream bytes `offset ..< offset + buffer.count`.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: Int, seed: UInt64) {
        let count = buffer.count
        guard count > 0, let base = buffer.baseAddress else { return }
        var block = UInt64(offset / 8)
        var i = 0
        let skip = offset % 8
        if skip != 0 {
            let take = min(8 - skip, count)
            store(word(seed, block), from: skip, count: take, to: base)
            i = take
            block &+= 1
        }
        // Whole words: one 8-byte store each (unaligned stores are allowed).
        while i + 8 <= count {
            base.storeBytes(of: word(seed, block), toByteOffset: i, as: UInt64.self)
            i += 8
            block &+= 1
        }
        if i < count {
            store(word(seed, block), from: 0, count: count - i, to: base + i)
        }
    }

    @inline(__always)
    private static func word(_ seed: UInt64, _ block: UInt64) -> UInt64 {
        splitmix(seed &+ block &* 0x9E37_79B9_7F4A_7C15).littleEndian
    }

    private static func store(_ word: UInt64, from skip: Int, count: Int, to base: UnsafeMutableRawPointer) {
        withUnsafeBytes(of: word) { w in
            for k in 0..<count { base.storeBytes(of: w[skip + k], toByteOffset: k, as: UInt8.self) }
        }
    }

    @inline(__always)
    static func splitmix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func hex<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
