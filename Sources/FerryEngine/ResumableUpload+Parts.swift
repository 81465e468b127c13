// The pieces of a resumable upload's appends: the server's `Upload-Limit`, and one part of the body.
import FerryCore
import Foundation
import NIOCore
import NIOHTTP1

/// The limits a server announces in `Upload-Limit`, a structured-field dictionary.
struct UploadLimits: Sendable, Hashable {
    var maxSize: Int64?
    var minSize: Int64?
    var maxAppendSize: Int64?
    var minAppendSize: Int64?

    init() {}

    /// Parses the field; nil when absent or malformed. Unknown keys are ignored; a known key
    /// with a value that is not a non-negative integer voids the whole field (draft §4.1.4).
    init?(field: String?) {
        guard let field, !field.isEmpty else { return nil }
        for member in field.split(separator: ",") {
            // Parameters (`;…`) are allowed and carry nothing we use.
            let item = member.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            let pair = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard let key = pair.first, !key.isEmpty else { return nil }
            let digits = pair.count == 2 && (1...15).contains(pair[1].count) && pair[1].allSatisfy { ("0"..."9").contains($0) }
            let value = digits ? Int64(pair[1]) : nil
            switch key {
            case "max-size", "min-size", "max-append-size", "min-append-size", "max-age":
                guard let value else { return nil }
                if key == "max-size" { maxSize = value }
                if key == "min-size" { minSize = value }
                if key == "max-append-size" { maxAppendSize = value }
                if key == "min-append-size" { minAppendSize = value }
            default:
                continue
            }
        }
    }

    /// These limits with those a later response announced put over them.
    func updated(by newer: UploadLimits?) -> UploadLimits {
        guard let newer else { return self }
        var merged = self
        merged.maxSize = newer.maxSize ?? maxSize
        merged.minSize = newer.minSize ?? minSize
        merged.maxAppendSize = newer.maxAppendSize ?? maxAppendSize
        merged.minAppendSize = newer.minAppendSize ?? minAppendSize
        return merged
    }

    /// Why an upload of `total` bytes cannot be done within these limits, or nil when it can.
    func refusal(forLength total: Int64) -> String? {
        if let maxSize, total > maxSize {
            return "the server takes resumable uploads of at most \(maxSize) bytes (Upload-Limit max-size); this one has \(total)"
        }
        if let minSize, total < minSize {
            return "the server takes resumable uploads of at least \(minSize) bytes (Upload-Limit min-size); this one has \(total)"
        }
        if let maxAppendSize, maxAppendSize == 0, total > 0 {
            return "the server allows appends of 0 bytes (Upload-Limit max-append-size=0)"
        }
        if let maxAppendSize, let minAppendSize, minAppendSize > maxAppendSize {
            return "the server's Upload-Limit min-append-size (\(minAppendSize)) is above its max-append-size (\(maxAppendSize))"
        }
        return nil
    }

    /// Bytes to send in the append that starts at `offset`: the rest, or `max-append-size`.
    /// Every part but the last is `max-append-size` long, so `min-append-size` (which the
    /// completing part is exempt from) holds whenever `refusal` found nothing.
    func appendLength(from offset: Int64, total: Int64) -> Int64 {
        let rest = max(0, total - offset)
        guard let maxAppendSize, maxAppendSize > 0 else { return rest }
        return min(rest, maxAppendSize)
    }
}

/// At most `length` bytes of a body, for one append: the last buffer is cut to fit, and
/// what is handed over is counted after the cut.
struct UploadPart: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let chunks: BodyChunks
    let length: Int64
    let onChunk: @Sendable (Int) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: BodyChunks.AsyncIterator
        var left: Int64
        let onChunk: @Sendable (Int) -> Void

        mutating func next() async throws -> ByteBuffer? {
            guard left > 0, var chunk = try await base.next() else { return nil }
            if Int64(chunk.readableBytes) > left, let cut = chunk.readSlice(length: Int(left)) { chunk = cut }
            left -= Int64(chunk.readableBytes)
            onChunk(chunk.readableBytes)
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: chunks.makeAsyncIterator(), left: length, onChunk: onChunk)
    }
}

extension HTTPHeaders {
    /// Fields of the original request that describe its body, or the upload itself: not
    /// carried to requests about the upload resource, which set their own.
    private static let bodyFields: Set<String> = [
        "content-type", "content-length", "content-encoding", "content-digest", "repr-digest",
        "transfer-encoding", "expect", "range", "if-range", "if-match", "if-none-match",
    ]

    /// Adds `original`'s fields to a request about its upload resource at `location` (the
    /// `OPTIONS` probe, `HEAD`, `PATCH`, `DELETE`), as URLSession does: a server that guards
    /// upload resources the way it guards the target (`Authorization`, `Cookie`, an API key
    /// among the session's extra headers) accepts them. Credentials stay on the origin they
    /// were for, as across redirects.
    mutating func addFields(of original: Request, for location: URL) {
        let sameOrigin = original.url.scheme?.lowercased() == location.scheme?.lowercased()
            && original.url.host?.lowercased() == location.host?.lowercased() && original.url.port == location.port
        for field in original.headers {
            let name = field.name.lowercased()
            if Self.bodyFields.contains(name) || name.hasPrefix("upload-") { continue }
            if !sameOrigin, name == "authorization" || name == "cookie" || name == "proxy-authorization" { continue }
            add(name: field.name, value: field.value)
        }
    }
}
