import Foundation
import HTTPTypes
import Hummingbird

/// Serves a file from disk with `ETag`, `Last-Modified`, `Accept-Ranges`, and single
/// `Range`/`If-Range` requests (206, or 416 with `Content-Range: bytes */size`). The body is
/// streamed from disk in chunks.
struct FileServing {
    var path: String
    var size: Int64
    var etag: String
    var modified: Double
    var contentType: String
    var extraHeaders: HTTPFields = [:]

    func response(_ request: Request, context: ByteClubContext, fileIO: FileIO) async throws -> Response {
        var headers = extraHeaders
        headers[.eTag] = etag
        headers[.lastModified] = Metadata.httpDate(modified)
        headers[.acceptRanges] = "bytes"
        headers[.contentType] = contentType
        if let match = request.headers[.ifNoneMatch], match == etag || match == "*" {
            return Response(status: .notModified, headers: headers)
        }
        var range: ClosedRange<Int64>? = nil
        if let header = request.headers[.range], honoursRange(request) {
            switch Self.parseRange(header, size: size) {
            case .none: break
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(size)"
                throw APIError(.rangeNotSatisfiable, "Range '\(header)' is outside the file's \(size) bytes", headers: headers)
            case .range(let r): range = r
            }
        }
        if request.method == .head {
            headers[.contentLength] = String(range.map { $0.count } ?? Int(size))
            return Response(status: range == nil ? .ok : .partialContent, headers: headers)
        }
        if let range {
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
            headers[.contentLength] = String(range.count)
            let body = try await fileIO.loadFile(path: path, range: Int(range.lowerBound)...Int(range.upperBound), context: context, chunkLength: 256 << 10)
            return Response(status: .partialContent, headers: headers, body: body)
        }
        headers[.contentLength] = String(size)
        if size == 0 { return Response(status: .ok, headers: headers) }
        let body = try await fileIO.loadFile(path: path, range: 0...Int(size - 1), context: context, chunkLength: 256 << 10)
        return Response(status: .ok, headers: headers, body: body)
    }

    /// `If-Range` with our ETag or our exact `Last-Modified` keeps the range; anything else
    /// means the client's copy is stale and gets the whole file.
    private func honoursRange(_ request: Request) -> Bool {
        guard let ifRange = request.headers[.ifRange] else { return true }
        return ifRange == etag || ifRange == Metadata.httpDate(modified)
    }

    enum ParsedRange: Equatable { case none, unsatisfiable, range(ClosedRange<Int64>) }

    /// One `bytes=` range; several ranges or a malformed header are ignored (RFC 9110 allows it).
    static func parseRange(_ header: String, size: Int64) -> ParsedRange {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .none }
        let spec = trimmed.dropFirst(6)
        guard !spec.contains(",") else { return .none }
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard parts.count == 2 else { return .none }
        if parts[0].isEmpty {
            guard let suffix = Int64(parts[1]), suffix >= 0 else { return .none }
            if suffix == 0 || size == 0 { return .unsatisfiable }
            return .range(max(0, size - suffix)...(size - 1))
        }
        guard let start = Int64(parts[0]), start >= 0 else { return .none }
        let end: Int64
        if parts[1].isEmpty {
            end = size - 1
        } else {
            guard let value = Int64(parts[1]), value >= start else { return .none }
            end = min(value, size - 1)
        }
        if start >= size { return .unsatisfiable }
        return .range(start...end)
    }
}
