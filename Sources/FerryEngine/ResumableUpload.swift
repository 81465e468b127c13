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
///
/// The flow, chosen so that no step depends on a `104` informational response (which
/// AsyncHTTPClient does not surface):
/// 1. `OPTIONS` with our newest version. A server that speaks the draft answers with
///    `Upload-Limit` (or echoes the version); one that speaks an older version answers 400
///    naming it, and we ask again with that; any other answer means a plain upload.
/// 2. Creation: the request's method and URL with an empty, incomplete body →
///    `201 Created` with `Location` (the upload resource) and `Upload-Offset: 0`.
/// 3. Append: `PATCH Location` with `Upload-Offset` and the body from there, marked complete;
///    the server's final response is the answer to the upload.
/// 4. After a broken connection: `HEAD Location` → `Upload-Offset`, then step 3 from there.
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
}

/// The server-side upload a creation request made.
struct ResumableUploadResource: Sendable {
    var location: URL
    var version: ResumableUploadVersion
}

/// Which URLs speak which version, so the `OPTIONS` probe is sent once per URL.
final class ResumableSupportCache: Sendable {
    private let known = NIOLockedValueBox([String: ResumableUploadVersion?]())
    func lookup(_ url: URL) -> ResumableUploadVersion?? { known.withLockedValue { $0[url.absoluteString] } }
    func store(_ version: ResumableUploadVersion?, for url: URL) { known.withLockedValue { $0[url.absoluteString] = version } }
}

extension TransferEngine {
    /// Bodies smaller than this go up in one plain request: the probe would cost more than a restart.
    static let resumableUploadThreshold: Int64 = 1 << 20

    func shouldUseResumableUpload(_ upload: UploadBody, request: Request, state: inout AttemptState) async throws -> Bool {
        if state.uploadResource != nil { return true }
        guard upload.isSeekable, let length = try upload.length(), length >= Self.resumableUploadThreshold,
            ["POST", "PUT"].contains(request.method.uppercased())
        else { return false }
        if let cached = resumableSupport.lookup(request.url) { return cached != nil }
        let version = try await probeResumableSupport(request.url, state: &state)
        resumableSupport.store(version, for: request.url)
        logger.debug("resumable uploads", metadata: ["url": "\(request.url.redactedForLogs)", "version": "\(version.map { "\($0.rawValue)" } ?? "none")"])
        return version != nil
    }

    private func probeResumableSupport(_ url: URL, state: inout AttemptState) async throws -> ResumableUploadVersion? {
        let offered = configuration.resumableUploadVersions.compactMap(ResumableUploadVersion.init(rawValue:))
        guard var version = offered.first else { return nil }
        for _ in 0..<2 {
            var probe = HTTPClientRequest(url: url.absoluteString)
            probe.method = .OPTIONS
            probe.headers.add(name: "Upload-Draft-Interop-Version", value: "\(version.rawValue)")
            state.requestCount += 1
            let response = try await limiter.withSlot(host: url.host ?? "") {
                let response = try await client.execute(probe, deadline: .now() + .seconds(30), logger: logger)
                _ = try? await response.body.collect(upTo: 1 << 16)
                return response
            }
            let echoed = response.headers.first(name: "Upload-Draft-Interop-Version").flatMap(Int.init)
            if (200..<300).contains(response.status.code),
                response.headers.contains(name: "Upload-Limit") || echoed == version.rawValue
            {
                state.uploadResource = nil
                return version
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
        let host = request.url.host ?? ""
        guard let total = try upload.length(), let version = resumableSupport.lookup(request.url) ?? state.uploadResource?.version
        else { throw FerryError(.unknown, "resumable upload without a length or version", url: request.url) }

        var offset: Int64 = 0
        if let resource = state.uploadResource {
            offset = try await currentOffset(of: resource, state: &state) ?? -1
            if offset < 0, state.transfer.resumeUpload != nil, !RetryPolicy.isIdempotent(request.method) {
                // An upload an earlier process sent: the server may have received all of it
                // and acted before forgetting it, so a POST is not sent again.
                throw FerryError(
                    .badServerResponse,
                    "the server no longer knows the upload resource; it may already have received the whole \(request.method), so it is not sent again",
                    url: request.url)
            }
            if offset < 0 {
                // The server forgot the upload: start a new one.
                state.uploadResource = nil
                offset = 0
            } else {
                observer.transferDidResume(atOffset: offset, expectedTotal: total)
                logger.info("upload resumed", metadata: ["url": "\(request.url.redactedForLogs)", "offset": "\(offset)"])
            }
        }
        if state.uploadResource == nil {
            let created = try await createUpload(request, version: version, total: total, state: &state)
            state.uploadResource = created
            observer.transferDidCreateUploadResource(ResumableUploadPoint(location: created.location, interopVersion: created.version.rawValue))
        }
        // From here the upload can be continued, whatever the method.
        state.canRepeat = true
        guard let resource = state.uploadResource else { throw FerryError(.badServerResponse, "no upload resource", url: request.url) }

        var append = try makeClientRequest(
            Request(url: resource.location, method: "PATCH"), upload: upload, from: offset, progress: progress)
        append.headers.add(name: "Upload-Draft-Interop-Version", value: "\(version.rawValue)")
        append.headers.add(name: "Upload-Offset", value: "\(offset)")
        if version >= .v6 { append.headers.add(name: "Content-Type", value: "application/partial-upload") }
        version.markComplete(true, in: &append.headers)
        state.requestCount += 1
        return try await limiter.withSlot(host: host) {
            let clientResponse = try await client.execute(append, deadline: .distantFuture, logger: logger)
            progress.didSend(0, final: true)
            let response = Response(clientResponse, url: request.url)
            if response.statusCode == 409 {
                // Our offset was wrong (the server kept less or more): ask again next attempt.
                _ = try? await clientResponse.body.collect(upTo: 1 << 16)
                throw FerryError(.networkConnectionLost, "the server's upload offset differs from ours", url: request.url)
            }
            guard await observer.transferDidReceive(response: response) else {
                throw FerryError(.cancelledByDelegate, "the delegate cancelled the task on its response", url: request.url)
            }
            state.uploadResource = nil
            return try await receiveBody(clientResponse, response: response, output: nil, resumeOffset: 0, state: &state, observer: observer, progress: progress)
        }
    }

    private func createUpload(_ request: Request, version: ResumableUploadVersion, total: Int64, state: inout AttemptState) async throws -> ResumableUploadResource {
        var creation = HTTPClientRequest(url: request.url.absoluteString)
        creation.method = HTTPMethod(rawValue: request.method.uppercased())
        for field in request.headers { creation.headers.add(name: field.name, value: field.value) }
        creation.headers.add(name: "Upload-Draft-Interop-Version", value: "\(version.rawValue)")
        if version >= .v5 { creation.headers.add(name: "Upload-Length", value: "\(total)") }
        version.markComplete(false, in: &creation.headers)
        creation.body = .bytes(ByteBuffer())
        creation.headers.replaceOrAdd(name: "Content-Length", value: "0")
        state.requestCount += 1
        let response = try await limiter.withSlot(host: request.url.host ?? "") {
            let response = try await client.execute(creation, deadline: .now() + .seconds(60), logger: logger)
            _ = try? await response.body.collect(upTo: 1 << 16)
            return response
        }
        guard response.status.code == 201 || (200..<300).contains(response.status.code),
            let location = response.headers.first(name: "Location"),
            let url = URL(string: location, relativeTo: request.url)?.absoluteURL
        else {
            throw FerryError(.badServerResponse, "the server offered resumable uploads but answered the creation request with \(response.status.code) and no Location", url: request.url)
        }
        return ResumableUploadResource(location: url, version: version)
    }

    /// `HEAD` on the upload resource: how many bytes the server has, or nil when it has forgotten it.
    private func currentOffset(of resource: ResumableUploadResource, state: inout AttemptState) async throws -> Int64? {
        var head = HTTPClientRequest(url: resource.location.absoluteString)
        head.method = .HEAD
        head.headers.add(name: "Upload-Draft-Interop-Version", value: "\(resource.version.rawValue)")
        state.requestCount += 1
        let response = try await limiter.withSlot(host: resource.location.host ?? "") {
            let response = try await client.execute(head, deadline: .now() + .seconds(60), logger: logger)
            _ = try? await response.body.collect(upTo: 1 << 16)
            return response
        }
        guard (200..<300).contains(response.status.code) else { return nil }
        guard let value = response.headers.first(name: "Upload-Offset"), let offset = Int64(value), offset >= 0 else {
            throw FerryError(.badServerResponse, "the upload resource gave no valid Upload-Offset", url: resource.location)
        }
        return offset
    }
}
