import FerryCore
import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Uploads that survive a broken connection: the IETF "Resumable Uploads for HTTP" draft,
/// the protocol URLSession speaks since iOS 17.
///
/// Versions spoken (the `Upload-Draft-Interop-Version` header): 3, 5, 6 — what
/// swift-nio-extras' `NIOResumableUpload` answers — and 8, the latest draft's. They differ
/// only in small ways: v3 says `Upload-Incomplete: ?1` where later ones say
/// `Upload-Complete: ?0`, and from v6 an append carries `Content-Type: application/partial-upload`.
/// Interop 8 is draft-ietf-httpbis-resumable-upload-09 to -11 (June 2025 – 2026); what it
/// adds for a client: a v8 server answers `OPTIONS` with `Accept-Patch: application/partial-upload`
/// (`Upload-Limit` only when limits apply), and a client MUST keep to the limits it knows
/// (`max-size`, `max-append-size`, …), cancelling (`DELETE`) an upload it cannot finish within them.
/// An append to a completed upload is refused, so a `HEAD` that says `Upload-Complete: ?1` ends it.
/// Sources: the draft's "Changes" and "Draft Version Identification" sections
/// (github.com/httpwg/http-extensions, draft-ietf-httpbis-resumable-upload.md), and the
/// interop bumps in httpwg/http-extensions pull requests 2659, 2749, 2823, 3026 and 3476 (to 9).
///
/// The flow, chosen so that no step depends on a `104` informational response (which
/// AsyncHTTPClient does not surface):
/// 1. `OPTIONS` with our newest version. A server that speaks the draft answers with
///    `Upload-Limit`, `Accept-Patch: application/partial-upload` or the version echoed; one that
///    speaks an older version answers 400 naming it, and we ask again with that; any other answer
///    means a plain upload. So does a `max-size` the body exceeds.
/// 2. Creation: the request's method and URL with an empty, incomplete body →
///    `201 Created` with `Location` (the upload resource). A refusal (4xx, 5xx) is the answer.
/// 3. Append: `PATCH Location` with `Upload-Offset` and the body from there, marked complete
///    (in parts of `max-append-size` when the server set one); the final response is the answer.
/// 4. After a broken connection: `HEAD Location` → `Upload-Offset`, then step 3 from there.
///    A `409` names the server's offset, and the append goes on from it.
enum ResumableUploadVersion: Int, Sendable, CaseIterable, Comparable {
    case v3 = 3, v5 = 5, v6 = 6, v8 = 8
    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    func markComplete(_ complete: Bool, in headers: inout HTTPHeaders) {
        if self >= .v5 {
            headers.replaceOrAdd(name: "Upload-Complete", value: complete ? "?1" : "?0")
        } else {
            headers.replaceOrAdd(name: "Upload-Incomplete", value: complete ? "?0" : "?1")
        }
    }

    /// Whether a response says the upload is complete; read leniently (either field, any
    /// version), because NIOResumableUpload marks v5/v6 answers with `Upload-Incomplete`.
    static func completion(in headers: HTTPHeaders) -> Bool? {
        switch headers.first(name: "Upload-Complete") {
        case "?1": return true
        case "?0": return false
        default: break
        }
        switch headers.first(name: "Upload-Incomplete") {
        case "?1": return false
        case "?0": return true
        default: return nil
        }
    }
}

/// The server-side upload a creation request made.
struct ResumableUploadResource: Sendable {
    var location: URL
    var version: ResumableUploadVersion
    /// The limits the server announced for it (creation, then each `HEAD`).
    var limits = UploadLimits()
    /// True until this process knows otherwise: the server may have received the whole body
    /// and acted on it (a resource from an earlier run, or a completing append whose every
    /// byte left without an answer). A POST is then never sent again.
    var mayHaveCompleted = true
}

/// Which URLs speak which version (and the limits their `OPTIONS` named): one probe per URL.
/// Bounded: ferryd's engine lives for weeks, and upload URLs are often one of a kind
/// (presigned, one per object); past ``capacity`` it starts again empty and fills as used.
final class ResumableSupportCache: Sendable {
    struct Support: Sendable, Hashable {
        var version: ResumableUploadVersion
        var limits: UploadLimits
    }
    static let capacity = 1024
    private let known = NIOLockedValueBox([String: Support?]())
    func lookup(_ url: URL) -> Support?? { known.withLockedValue { $0[url.absoluteString] } }
    func store(_ support: Support?, for url: URL) {
        known.withLockedValue { known in
            if known.count >= Self.capacity, known[url.absoluteString] == nil { known.removeAll(keepingCapacity: true) }
            known[url.absoluteString] = support
        }
    }
    /// How many URLs it knows now.
    var count: Int { known.withLockedValue { $0.count } }
}

extension TransferEngine {
    /// Bodies smaller than this go up in one plain request: the probe would cost more than a restart.
    static let resumableUploadThreshold: Int64 = 1 << 20

    func shouldUseResumableUpload(_ upload: UploadBody, request: Request, state: inout AttemptState) async throws -> Bool {
        if state.uploadResource != nil { return true }
        guard upload.isSeekable, let length = try upload.length(), length >= Self.resumableUploadThreshold,
            ["POST", "PUT"].contains(request.method.uppercased())
        else { return false }
        let support: ResumableSupportCache.Support?
        if let cached = resumableSupport.lookup(request.url) {
            support = cached
        } else {
            support = try await probeResumableSupport(request.url, state: &state)
            resumableSupport.store(support, for: request.url)
            logger.debug("resumable uploads", metadata: ["url": "\(request.url.redactedForLogs)", "version": "\(support.map { "\($0.version.rawValue)" } ?? "none")"])
        }
        guard let support else { return false }
        if let reason = support.limits.refusal(forLength: length) {
            // Outside the announced limits a resumable upload cannot finish; a plain one lets the server decide.
            logger.info("plain upload", metadata: ["url": "\(request.url.redactedForLogs)", "reason": "\(reason)"])
            return false
        }
        return true
    }

    private func probeResumableSupport(_ url: URL, state: inout AttemptState) async throws -> ResumableSupportCache.Support? {
        let offered = configuration.resumableUploadVersions.compactMap(ResumableUploadVersion.init(rawValue:))
        guard var version = offered.first else { return nil }
        for _ in 0..<2 {
            let response = try await askAboutUpload(.OPTIONS, at: url, version: version, state: &state, timeout: .seconds(30))
            let echoed = response.headers.first(name: "Upload-Draft-Interop-Version").flatMap(Int.init)
            // From draft -10 (interop 8) a server that can create upload resources MUST list the media type.
            let acceptsPartialUploads = response.headers["Accept-Patch"].contains { $0.lowercased().contains("application/partial-upload") }
            if (200..<300).contains(response.status.code),
                response.headers.contains(name: "Upload-Limit") || echoed == version.rawValue || acceptsPartialUploads
            {
                state.uploadResource = nil
                let limits = UploadLimits(field: response.headers.first(name: "Upload-Limit")) ?? UploadLimits()
                return ResumableSupportCache.Support(version: version, limits: limits)
            }
            // An older server names the version it speaks.
            if response.status == .badRequest, let echoed, echoed != version.rawValue,
                let older = ResumableUploadVersion(rawValue: echoed), offered.contains(older)
            {
                version = older
                continue
            }
            return nil
        }
        return nil
    }

    func resumableUpload(
        _ upload: UploadBody,
        state: inout AttemptState,
        observer: any TransferObserver,
        progress: TransferProgress
    ) async throws -> TransferResult {
        let request = state.request
        let support = resumableSupport.lookup(request.url) ?? nil
        guard let total = try upload.length(), let version = state.uploadResource?.version ?? support?.version
        else { throw FerryError(.unknown, "resumable upload without a length or version", url: request.url) }

        var offset: Int64 = 0
        if let resource = state.uploadResource {
            if let resumed = try await resumePoint(of: resource, total: total, state: &state) {
                offset = resumed
                observer.transferDidResume(atOffset: offset, expectedTotal: total)
                logger.info("upload resumed", metadata: ["url": "\(request.url.redactedForLogs)", "offset": "\(offset)"])
            }
        }
        if state.uploadResource == nil {
            let limits = support?.limits ?? UploadLimits()
            switch try await createUpload(request, version: version, total: total, limits: limits, state: &state, observer: observer, progress: progress) {
            case .answered(let result):
                return result
            case .created(let created):
                state.uploadResource = created
                observer.transferDidCreateUploadResource(ResumableUploadPoint(location: created.location, interopVersion: created.version.rawValue))
            }
        }
        guard let resource = state.uploadResource else { throw FerryError(.badServerResponse, "no upload resource", url: request.url) }
        if let reason = resource.limits.refusal(forLength: total) {
            // The draft: a client that cannot finish within the limits stops and cancels the upload.
            await cancelUpload(resource, state: &state)
            throw FerryError(.dataLengthExceedsMaximum, reason, url: request.url)
        }
        // From here the upload can be continued, whatever the method.
        state.continuesUpload = true

        progress.startSending(from: offset, expected: total)
        var conflicts = 0
        let parts = Int((total - offset) / max(1, resource.limits.maxAppendSize ?? total)) + 5
        // Bounded: each pass appends a part, moves to the server's offset (3 times at most) or ends.
        for _ in 0..<parts {
            guard let resource = state.uploadResource else { break }
            let length = resource.limits.appendLength(from: offset, total: total)
            let completes = offset + length == total
            let outcome = try await append(
                upload, to: resource, from: offset, length: length, completes: completes,
                state: &state, observer: observer, progress: progress)
            switch outcome {
            case .answered(let result):
                return result
            case .appended(let next):
                guard next > offset, next <= total else {
                    throw FerryError(.networkConnectionLost, "the server acknowledged a part at byte \(next), not after \(offset)", url: request.url)
                }
                if next != offset + length { progress.startSending(from: next, expected: total) }
                offset = next
            case .conflict(let serverOffset):
                conflicts += 1
                guard conflicts <= 3, let serverOffset, serverOffset >= 0, serverOffset <= total else {
                    // Ask again with HEAD on the next attempt.
                    throw FerryError(.networkConnectionLost, "the server's upload offset differs from ours", url: request.url)
                }
                logger.info("upload offset corrected", metadata: ["url": "\(request.url.redactedForLogs)", "ours": "\(offset)", "server": "\(serverOffset)"])
                offset = serverOffset
                progress.startSending(from: offset, expected: total)
                observer.transferDidResume(atOffset: offset, expectedTotal: total)
            }
        }
        throw FerryError(.networkConnectionLost, "the server stopped taking the upload's parts at byte \(offset)", url: request.url)
    }

    /// What one `PATCH` led to.
    private enum AppendOutcome {
        /// A part was taken; the upload goes on from this offset.
        case appended(Int64)
        /// `409`: our offset was not the server's (which it names, when it does).
        case conflict(Int64?)
        /// The answer to the whole upload (or its refusal).
        case answered(TransferResult)
    }

    private func append(
        _ upload: UploadBody, to resource: ResumableUploadResource, from offset: Int64, length: Int64, completes: Bool,
        state: inout AttemptState, observer: any TransferObserver, progress: TransferProgress
    ) async throws -> AppendOutcome {
        let request = state.request
        try await evaluateServerTrust(for: resource.location, transfer: state.transfer, observer: observer)
        var append = try clientRequest(to: resource.location, for: state.transfer)
        append.method = .PATCH
        append.headers.addFields(of: request, for: resource.location)
        append.headers.add(name: "Upload-Draft-Interop-Version", value: "\(resource.version.rawValue)")
        append.headers.add(name: "Upload-Offset", value: "\(offset)")
        if resource.version >= .v6 { append.headers.add(name: "Content-Type", value: "application/partial-upload") }
        resource.version.markComplete(completes, in: &append.headers)
        let handedOver = NIOLockedValueBox<Int64>(0)
        if length > 0 {
            let chunks = try upload.chunks(from: offset) { _ in }
            let part = UploadPart(chunks: chunks, length: length) { count in
                handedOver.withLockedValue { $0 += Int64(count) }
                progress.didSend(count)
            }
            append.body = .stream(part, length: .known(length))
        } else {
            append.body = .bytes(ByteBuffer())
        }
        state.requestCount += 1
        let appendRequest = append
        return try await limiter.withSlot(host: resource.location.host ?? "", admitted: state.admitted) {
            let clientResponse: HTTPClientResponse
            do {
                clientResponse = try await client(for: state.transfer, url: resource.location).execute(appendRequest, deadline: .distantFuture, logger: clientLogger)
            } catch {
                // Every byte of the completing part left: the server may have finished the upload.
                if completes, handedOver.withLockedValue({ $0 }) >= length { state.uploadResource?.mayHaveCompleted = true }
                throw error
            }
            progress.touch()
            let response = Response(clientResponse, url: request.url)
            if response.statusCode == 409 {
                _ = try? await clientResponse.body.collect(upTo: 1 << 16)
                return .conflict(clientResponse.headers.first(name: "Upload-Offset").flatMap { Int64($0) })
            }
            if !completes, (200..<300).contains(response.statusCode), ResumableUploadVersion.completion(in: clientResponse.headers) != true {
                _ = try? await clientResponse.body.collect(upTo: 1 << 16)
                let acknowledged = clientResponse.headers.first(name: "Upload-Offset").flatMap { Int64($0) }
                return .appended(acknowledged ?? offset + length)
            }
            progress.didSend(0, final: true)
            guard await observer.transferDidReceive(response: response) else {
                throw FerryError(.cancelledByDelegate, "the delegate cancelled the task on its response", url: request.url)
            }
            state.uploadResource = nil
            return .answered(try await receiveBody(clientResponse, response: response, output: nil, resumeOffset: 0, state: &state, observer: observer, progress: progress))
        }
    }

    /// What the creation request led to.
    private enum Creation {
        case created(ResumableUploadResource)
        /// Refused (4xx: not allowed, too large; 5xx): the server's answer to the upload.
        case answered(TransferResult)
    }

    private func createUpload(
        _ request: Request, version: ResumableUploadVersion, total: Int64, limits: UploadLimits,
        state: inout AttemptState, observer: any TransferObserver, progress: TransferProgress
    ) async throws -> Creation {
        var creation = try clientRequest(to: request.url, for: state.transfer)
        creation.method = HTTPMethod(rawValue: request.method.uppercased())
        for field in request.headers { creation.headers.add(name: field.name, value: field.value) }
        creation.headers.add(name: "Upload-Draft-Interop-Version", value: "\(version.rawValue)")
        if version >= .v5 { creation.headers.add(name: "Upload-Length", value: "\(total)") }
        version.markComplete(false, in: &creation.headers)
        creation.body = .bytes(ByteBuffer())
        creation.headers.replaceOrAdd(name: "Content-Length", value: "0")
        state.requestCount += 1
        let creationRequest = creation
        return try await limiter.withSlot(host: request.url.host ?? "", admitted: state.admitted) {
            let clientResponse = try await client(for: state.transfer, url: request.url).execute(creationRequest, deadline: .now() + .seconds(60), logger: clientLogger)
            let response = Response(clientResponse, url: request.url)
            guard (200..<300).contains(response.statusCode) else {
                guard await observer.transferDidReceive(response: response) else {
                    throw FerryError(.cancelledByDelegate, "the delegate cancelled the task on its response", url: request.url)
                }
                return .answered(try await receiveBody(clientResponse, response: response, output: nil, resumeOffset: 0, state: &state, observer: observer, progress: progress))
            }
            _ = try? await clientResponse.body.collect(upTo: 1 << 16)
            guard let location = clientResponse.headers.first(name: "Location"),
                let url = URL(string: location, relativeTo: request.url)?.absoluteURL
            else {
                throw FerryError(.badServerResponse, "the server offered resumable uploads but answered the creation request with \(response.statusCode) and no Location", url: request.url)
            }
            let announced = UploadLimits(field: clientResponse.headers.first(name: "Upload-Limit"))
            return .created(ResumableUploadResource(location: url, version: version, limits: limits.updated(by: announced), mayHaveCompleted: false))
        }
    }

    /// Where an existing upload resource continues (`HEAD`), or nil when a new upload must
    /// start; throws when the upload must not go on at all.
    private func resumePoint(of resource: ResumableUploadResource, total: Int64, state: inout AttemptState) async throws -> Int64? {
        let request = state.request
        guard let status = try await uploadStatus(of: resource, state: &state) else {
            if resource.mayHaveCompleted, !RetryRequest.isIdempotent(request.method) {
                // The server may have received all of the POST and acted before forgetting it.
                throw FerryError(
                    .badServerResponse,
                    "the server no longer knows the upload resource; it may already have received the whole \(request.method), so it is not sent again",
                    url: request.url)
            }
            // The server forgot the upload: start a new one.
            state.uploadResource = nil
            return nil
        }
        if status.complete {
            // Appending to a completed upload is refused; its answer went with the connection.
            // A PUT (idempotent) is sent again as a new upload to get that answer; a POST the
            // server may have acted on is not.
            guard RetryRequest.isIdempotent(request.method) else {
                throw FerryError(
                    .badServerResponse,
                    "the server has the whole upload (Upload-Complete: ?1) but its response was lost; the \(request.method) is not sent again",
                    url: request.url)
            }
            logger.info("upload complete on the server but its answer was lost; sending it again", metadata: [
                "url": "\(request.url.redactedForLogs)", "method": "\(request.method)",
            ])
            state.uploadResource = nil
            return nil
        }
        if status.offset > total || status.length.map({ $0 != total }) == true {
            // The body changed since that upload began: it cannot be finished with these bytes.
            // It is incomplete, so the server has not acted on it; cancel it and start anew.
            logger.info("upload restarted", metadata: ["url": "\(request.url.redactedForLogs)", "server": "\(status.offset)/\(status.length.map(String.init) ?? "?")", "total": "\(total)"])
            await cancelUpload(resource, state: &state)
            state.uploadResource = nil
            return nil
        }
        var known = resource
        known.limits = resource.limits.updated(by: status.limits)
        known.mayHaveCompleted = false
        state.uploadResource = known
        return status.offset
    }
}
