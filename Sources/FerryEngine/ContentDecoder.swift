import CZlib
import Foundation
import NIOCore

/// Undoes a response body's content coding (`Content-Encoding: gzip`, `x-gzip` or `deflate`)
/// as the body arrives, the way URLSession hands data tasks their bodies. A body that decodes
/// to more than ``maximumRatio`` times its coded size is refused (a decompression bomb: no
/// real document is), as is one that is damaged, cut short, or followed by other bytes.
///
/// The engine decodes here rather than in AsyncHTTPClient's pipeline: its decompression
/// handler sat in every connection and touched every message, coded or not (7% of the CPU of
/// a thousand small downloads, which ask for `identity` anyway).
///
/// ```swift
/// if let decoder = try ContentDecoder(contentEncoding: response.headers["Content-Encoding"], url: url) {
///     let plain = try decoder.decode(codedChunk)   // as each chunk arrives
///     try decoder.finish()                         // at the end: the coded body was whole
/// }
/// ```
final class ContentDecoder {
    static let maximumRatio = 1000

    private let stream: UnsafeMutablePointer<z_stream>
    private let url: URL?
    /// `deflate` is a zlib stream by the RFC, but some servers send raw deflate: tried when
    /// the zlib header does not parse.
    private let isDeflate: Bool
    private var triedRawDeflate = false
    /// A `deflate` body's first bytes, kept to decode again as raw deflate if the zlib header
    /// turns out not to parse (it is decided within the first two bytes, which may come apart).
    private var firstBytes = ByteBuffer()
    private var codedBytes = 0
    private var decodedBytes = 0
    private var ended = false

    /// Nil when the coding is none the engine undoes (or identity): the body is passed as it is.
    init?(contentEncoding: String?, url: URL?) throws(FerryError) {
        switch contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "gzip", "x-gzip": isDeflate = false
        case "deflate": isDeflate = true
        default: return nil
        }
        self.url = url
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 15 + 32: the largest window, and a gzip or zlib header recognised by itself.
        let status = inflateInit2_(stream, 15 + 32, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw FerryError(.unknown, "zlib could not start decoding (status \(status))", url: url)
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// The decoded bytes of the next coded chunk (maybe none yet).
    func decode(_ chunk: ByteBuffer) throws(FerryError) -> ByteBuffer {
        guard chunk.readableBytes > 0 else { return ByteBuffer() }
        guard !ended else { throw failure("the server sent bytes after the end of the coded body") }
        codedBytes += chunk.readableBytes
        let mayBeRaw = isDeflate && !triedRawDeflate && firstBytes.readableBytes < 64
        if mayBeRaw {
            var copy = chunk
            firstBytes.writeBuffer(&copy)
        }
        do {
            return try inflate(chunk)
        } catch let error where mayBeRaw && decodedBytes == 0 {
            // No zlib header: raw deflate, from the body's first byte again.
            triedRawDeflate = true
            guard inflateReset2(stream, -15) == Z_OK else { throw error }
            defer { firstBytes = ByteBuffer() }
            return try inflate(firstBytes)
        }
    }

    /// The body ended: it must have been a whole coded stream (an empty body is allowed).
    func finish() throws(FerryError) {
        guard ended || codedBytes == 0 else { throw failure("the coded body ended before its end") }
    }

    private func inflate(_ chunk: ByteBuffer) throws(FerryError) -> ByteBuffer {
        var input = chunk
        var output = ByteBuffer()
        var status = Z_OK
        input.withUnsafeMutableReadableBytes { coded in
            stream.pointee.next_in = coded.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_in = UInt32(coded.count)
            repeat {
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: 16_384) { plain in
                    stream.pointee.next_out = plain.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = UInt32(plain.count)
                    status = CZlib.inflate(stream, Z_NO_FLUSH)
                    return plain.count - Int(stream.pointee.avail_out)
                }
            } while status == Z_OK && (stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0)
            stream.pointee.next_in = nil
        }
        decodedBytes += output.readableBytes
        switch status {
        case Z_STREAM_END:
            ended = true
            if stream.pointee.avail_in > 0 { throw failure("the server sent bytes after the end of the coded body") }
        case Z_OK, Z_BUF_ERROR:
            break  // more input is needed
        default:
            throw failure("the body is not valid \(isDeflate ? "deflate" : "gzip") data (zlib status \(status))")
        }
        guard decodedBytes <= codedBytes * Self.maximumRatio else {
            throw failure("the body decodes to more than \(Self.maximumRatio) times its coded size; refused as a decompression bomb")
        }
        return output
    }

    private func failure(_ message: String) -> FerryError {
        FerryError(.cannotDecodeContentData, message, url: url)
    }
}
