import FerryCore
public import Foundation
import NIOCore

/// Where an upload's bytes come from.
///
/// ```swift
/// let fromMemory = UploadBody.data(Data("hello".utf8))
/// let fromDisk   = UploadBody.file(URL(fileURLWithPath: "/tmp/photo.jpg"))
/// let streamed   = UploadBody.stream(length: 1_000) {
///     AsyncThrowingStream { continuation in continuation.yield([UInt8](repeating: 0, count: 1_000)); continuation.finish() }
/// }
/// ```
///
/// Files are read in chunks as the socket takes them, so a 10 GiB upload uses as much
/// memory as a 10 KiB one. A stream is asked for anew each time the body must be sent
/// again (after a redirect that keeps the body, or a retry), like URLSession's
/// `needNewBodyStream`.
public struct UploadBody: Sendable {
    enum Source: Sendable {
        case data(Data)
        case file(URL)
        case stream(length: Int64?, make: @Sendable () -> AsyncThrowingStream<[UInt8], any Error>)
    }

    let source: Source

    /// The file the body is read from, when it is one (background sessions hand the path to ferryd).
    package var fileURL: URL? {
        if case .file(let url) = source { return url }
        return nil
    }

    /// The bytes, when the body is in memory (background sessions write them to a file first).
    package var inMemoryData: Data? {
        if case .data(let data) = source { return data }
        return nil
    }

    public static func data(_ data: Data) -> UploadBody { UploadBody(source: .data(data)) }
    public static func file(_ url: URL) -> UploadBody { UploadBody(source: .file(url)) }
    /// - Parameters:
    ///   - length: the total when known (sent as `Content-Length`); nil sends the body chunked.
    ///   - makeStream: returns a fresh stream of the body from its first byte.
    public static func stream(
        length: Int64?,
        _ makeStream: @escaping @Sendable () -> AsyncThrowingStream<[UInt8], any Error>
    ) -> UploadBody {
        UploadBody(source: .stream(length: length, make: makeStream))
    }

    /// The length in bytes, when it is known before sending (files: their size now).
    public func length() throws -> Int64? {
        switch source {
        case .data(let data): return Int64(data.count)
        case .stream(let length, _): return length
        case .file(let url):
            let file = try InputFile(url: url)
            defer { file.close() }
            return file.size
        }
    }

    /// Whether the body can be read from any offset (needed to resume an upload).
    var isSeekable: Bool {
        if case .stream = source { return false }
        return true
    }

    /// The bytes from `offset` to the end, as chunks for AsyncHTTPClient, counting what is
    /// handed over through `onChunk`.
    func chunks(from offset: Int64, onChunk: @escaping @Sendable (Int) -> Void) throws -> BodyChunks {
        switch source {
        case .data(let data):
            let slice = data.dropFirst(Int(offset))
            return BodyChunks(kind: .memory(ByteBuffer(bytes: slice)), onChunk: onChunk)
        case .file(let url):
            return BodyChunks(kind: .file(try InputFile(url: url), offset), onChunk: onChunk)
        case .stream(_, let make):
            precondition(offset == 0, "streams are not seekable")
            return BodyChunks(kind: .stream(make()), onChunk: onChunk)
        }
    }
}

/// The body as an async sequence of buffers, read lazily (the file in 256 KiB chunks).
struct BodyChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    enum Kind: Sendable {
        case memory(ByteBuffer)
        case file(InputFile, Int64)
        case stream(AsyncThrowingStream<[UInt8], any Error>)
    }
    let kind: Kind
    let onChunk: @Sendable (Int) -> Void
    static let chunkSize = 256 * 1024

    struct AsyncIterator: AsyncIteratorProtocol {
        var kind: Kind
        var streamIterator: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator?
        let onChunk: @Sendable (Int) -> Void
        var finished = false
        /// The last few file chunks, kept so their memory can be refilled once the socket
        /// has taken them (the oldest is reused), and to cap what is in flight. A fresh
        /// 256 KiB buffer per chunk costs 64 page faults (measured: 250,000 faults and about
        /// a third of the CPU of a 1 GiB upload), and bursts left glibc holding tens of MiB.
        var recentChunks: [ByteBuffer] = []
        static let reusedChunks = 8

        mutating func next() async throws -> ByteBuffer? {
            if finished { return nil }
            switch kind {
            case .memory(var buffer):
                finished = true
                guard buffer.readableBytes > 0 else { return nil }
                // Hand memory bodies over in chunks too, so progress moves smoothly.
                if buffer.readableBytes > BodyChunks.chunkSize {
                    let chunk = buffer.readSlice(length: BodyChunks.chunkSize)!
                    kind = .memory(buffer)
                    finished = false
                    onChunk(chunk.readableBytes)
                    return chunk
                }
                onChunk(buffer.readableBytes)
                return buffer
            case .file(let file, let offset):
                var reuse: ByteBuffer? = nil
                if recentChunks.count >= Self.reusedChunks {
                    // At most `reusedChunks` chunks in flight: AsyncHTTPClient pauses the body
                    // a hop late, and while its event loop waits for a core a fast disk would
                    // queue tens of MiB. Wait (briefly, bounded) for the oldest to be sent.
                    var oldest = recentChunks.removeFirst()
                    for attempt in 0..<200 {
                        if oldest.modifyIfUniquelyOwned({ $0.clear() }) != nil {
                            reuse = oldest
                            break
                        }
                        try await Task.sleep(for: .microseconds(attempt < 20 ? 100 : 2_000))
                    }
                }
                let chunk = try file.read(at: offset, upTo: BodyChunks.chunkSize, reusing: &reuse)
                guard chunk.readableBytes > 0 else {
                    finished = true
                    file.close()
                    return nil
                }
                kind = .file(file, offset + Int64(chunk.readableBytes))
                recentChunks.append(chunk)
                onChunk(chunk.readableBytes)
                return chunk
            case .stream:
                guard let bytes = try await streamIterator?.next() else {
                    finished = true
                    return nil
                }
                onChunk(bytes.count)
                return ByteBuffer(bytes: bytes)
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        var iterator = AsyncIterator(kind: kind, onChunk: onChunk)
        if case .stream(let stream) = kind { iterator.streamIterator = stream.makeAsyncIterator() }
        return iterator
    }
}
