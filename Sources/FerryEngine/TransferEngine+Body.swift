import FerryCore
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

extension TransferEngine {
    /// Streams the final response's body to its destination, checking framing and digests.
    func receiveBody(
        _ clientResponse: HTTPClientResponse,
        response: Response,
        output: OutputFile?,
        resumeOffset: Int64,
        state: inout AttemptState,
        observer: any TransferObserver,
        progress: TransferProgress
    ) async throws -> TransferResult {
        let url = response.url
        let check = try IntegrityCheck(expectedSHA256: state.transfer.request.expectedSHA256, response: response)
        var startOffset: Int64 = 0
        // A decoded body's size is not known ahead: Content-Length counts the coded bytes.
        var expectedTotal = response.isContentCoded ? -1 : response.expectedContentLength

        if let output {
            switch response.statusCode {
            case 206 where resumeOffset > 0:
                guard let range = ContentRange(response.headers["Content-Range"]), range.first == resumeOffset else {
                    throw FerryError(.badServerResponse, "the server answered a resume from byte \(resumeOffset) with Content-Range \(response.headers["Content-Range"] ?? "missing")", url: url)
                }
                startOffset = resumeOffset
                expectedTotal = range.total ?? (response.expectedContentLength >= 0 ? resumeOffset + response.expectedContentLength : -1)
                logger.debug("download resumed", metadata: ["url": "\(url.redactedForLogs)", "offset": "\(resumeOffset)"])
            default:
                // A full body: the resource changed, or the server ignores ranges. Start over,
                // so the file is never a splice of two versions.
                try output.truncate(to: 0)
            }
            // A coded body cannot be resumed by offset: its bytes here are decoded ones.
            state.validator = response.isContentCoded ? nil : Self.validator(of: response)
            observer.transferDidResume(atOffset: startOffset, expectedTotal: expectedTotal)
        }
        progress.startWriting(from: startOffset, expected: expectedTotal)

        // Hash while streaming when the whole file passes by now; after a resume, the file
        // is hashed from disk at the end.
        let wholeAlgorithms = Set(check.wholeFile.map(\.algorithm))
        let contentAlgorithms = Set(check.content.map(\.algorithm))
        var wholeDigest = StreamingDigest(algorithms: startOffset == 0 ? wholeAlgorithms : [])
        var contentDigest = StreamingDigest(algorithms: contentAlgorithms)

        var kept = ByteBuffer()
        var count = BodyCount(response, method: state.request.method)
        let decoder = count.hasNoBody ? nil : try ContentDecoder(contentEncoding: response.headers["Content-Encoding"], url: url)
        do {
            for try await arrived in clientResponse.body {
                count.received += Int64(arrived.readableBytes)
                let chunk = try decoder?.decode(arrived) ?? arrived
                if chunk.readableBytes == 0 { continue }  // a coded chunk that decoded to nothing yet
                wholeDigest.update(chunk)
                contentDigest.update(chunk)
                switch state.transfer.destination {
                case .file:
                    try output!.append(chunk)
                case .memory(let limit):
                    guard kept.readableBytes + chunk.readableBytes <= limit else {
                        throw FerryError(.dataLengthExceedsMaximum, "the body is larger than the \(limit)-byte limit for in-memory tasks; use a download task", url: url)
                    }
                    var copy = chunk
                    kept.writeBuffer(&copy)
                    state.deliveredBodyBytes += Int64(chunk.readableBytes)
                    await observer.transferDidReceive(data: Data(buffer: chunk, byteTransferStrategy: .noCopy))
                case .stream:
                    state.deliveredBodyBytes += Int64(chunk.readableBytes)
                    await observer.transferDidReceive(data: Data(buffer: chunk, byteTransferStrategy: .noCopy))
                }
                progress.didWrite(chunk.readableBytes)
            }
            try decoder?.finish()
        } catch {
            throw count.failure(error, url: url)
        }
        if let shortfall = count.shortfall(url: url) { throw shortfall }
        progress.didWrite(0, final: true)

        try StreamingDigest.verify(check.content, against: contentDigest.finalize(), url: url)
        if !check.wholeFile.isEmpty {
            var digests = wholeDigest.finalize()
            if startOffset > 0, let output {
                try output.sync()
                digests = try StreamingDigest.ofFile(output.url, algorithms: wholeAlgorithms)
            }
            do {
                try StreamingDigest.verify(check.wholeFile, against: digests, url: url)
            } catch {
                if let output { try? output.truncate(to: 0) }
                state.validator = nil
                throw error
            }
        }
        let body: Data? = if case .memory = state.transfer.destination { Data(buffer: kept) } else { nil }
        let (sent, _) = progress.totals
        return TransferResult(
            response: response,
            body: body,
            bytesReceived: output?.size ?? count.received,
            bytesSent: sent,
            validator: state.validator,
            requestCount: state.requestCount)
    }

    /// A strong ETag, else Last-Modified: what `If-Range` may carry (RFC 9110 §13.1.5).
    static func validator(of response: Response) -> String? {
        if let etag = response.etag, !etag.hasPrefix("W/") { return etag }
        return response.lastModified
    }
}

/// A response body's declared length against the bytes that came, which tells a body cut
/// short; for the engine's body reader and for one on a connection's loop (``LoopTransfer``).
struct BodyCount {
    /// No body by the rules: HEAD, 204, 304 and 1xx carry none whatever Content-Length says
    /// (RFC 9110 §8.6).
    let hasNoBody: Bool
    /// `Content-Length`, or -1 when it says nothing of the bytes that come (no body, a coded body, none sent).
    let declared: Int64
    /// The bytes that came (before any decoding).
    var received: Int64 = 0

    init(_ response: Response, method: String) {
        hasNoBody = method.uppercased() == "HEAD" || response.statusCode == 204 || response.statusCode == 304
            || (100..<200).contains(response.statusCode)
        declared = hasNoBody || response.isContentCoded ? -1 : response.expectedContentLength
    }

    /// The error of a body that ended with fewer or more bytes than declared; nil when whole.
    func shortfall(url: URL) -> FerryError? {
        guard declared >= 0, received != declared else { return nil }
        return cutShort(url: url, underlying: nil)
    }

    /// `error`, which ended the body, as the transfer's: a connection lost before the declared
    /// length says how far it got.
    func failure(_ error: any Error, url: URL) -> FerryError {
        let mapped = FerryError.from(error, url: url)
        guard declared >= 0, received < declared, [.networkConnectionLost, .badServerResponse, .unknown].contains(mapped.code) else { return mapped }
        return cutShort(url: url, underlying: error)
    }

    private func cutShort(url: URL, underlying: (any Error)?) -> FerryError {
        FerryError(.networkConnectionLost, "the connection closed after \(received) of \(declared) bytes", url: url, underlying: underlying)
    }
}

/// `Content-Range: bytes first-last/total` (total may be `*`).
struct ContentRange: Equatable {
    var first: Int64
    var last: Int64
    var total: Int64?

    init?(_ value: String?) {
        guard let value = value?.trimmingCharacters(in: .whitespaces), value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6)
        let halves = spec.split(separator: "/", maxSplits: 1)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first <= last else { return nil }
        self.first = first
        self.last = last
        self.total = halves[1] == "*" ? nil : Int64(halves[1])
        if let total, total <= last { return nil }
    }
}
