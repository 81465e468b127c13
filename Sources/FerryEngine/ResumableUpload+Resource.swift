// Requests about an upload resource that already exists: how much it holds (`HEAD`), and
// giving it up (`DELETE`).
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension TransferEngine {
    /// What a `HEAD` on the upload resource says, or nil when the server has forgotten it.
    func uploadStatus(
        of resource: ResumableUploadResource, state: inout AttemptState
    ) async throws -> (offset: Int64, complete: Bool, length: Int64?, limits: UploadLimits?)? {
        var head = HTTPClientRequest(url: resource.location.absoluteString)
        head.method = .HEAD
        head.headers.addFields(of: state.request, for: resource.location)
        head.headers.add(name: "Upload-Draft-Interop-Version", value: "\(resource.version.rawValue)")
        state.requestCount += 1
        let headRequest = head
        let response = try await limiter.withSlot(host: resource.location.host ?? "") {
            let response = try await client.execute(headRequest, deadline: .now() + .seconds(60), logger: logger)
            _ = try? await response.body.collect(upTo: 1 << 16)
            return response
        }
        let code = Int(response.status.code)
        guard (200..<300).contains(code) else {
            // Busy or failing is not forgetting: a POST must not be declared lost (or a PUT
            // restarted from zero) because the server could not answer now. Ask again later.
            if code >= 500 || code == 429 || code == 408 {
                let retryAfter = RetryPolicy.parseRetryAfter(response.headers.first(name: "Retry-After"))
                throw RetryLater(
                    delay: retryAfter, reason: "HEAD on the upload resource: HTTP \(code)",
                    error: FerryError(.networkConnectionLost, "the upload was interrupted and the server could not say how much it has (HEAD answered \(code))", url: resource.location))
            }
            return nil
        }
        guard let value = response.headers.first(name: "Upload-Offset"), let offset = Int64(value), offset >= 0 else {
            throw FerryError(.badServerResponse, "the upload resource gave no valid Upload-Offset", url: resource.location)
        }
        let length = response.headers.first(name: "Upload-Length").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
        let complete = ResumableUploadVersion.completion(in: response.headers) ?? false
        return (offset, complete, length, UploadLimits(field: response.headers.first(name: "Upload-Limit")))
    }

    /// `DELETE` on the upload resource, so the server can free what it holds. Best effort:
    /// the caller gives the upload up either way.
    func cancelUpload(_ resource: ResumableUploadResource, state: inout AttemptState) async {
        var delete = HTTPClientRequest(url: resource.location.absoluteString)
        delete.method = .DELETE
        delete.headers.addFields(of: state.request, for: resource.location)
        delete.headers.add(name: "Upload-Draft-Interop-Version", value: "\(resource.version.rawValue)")
        state.requestCount += 1
        let deleteRequest = delete
        let status = try? await limiter.withSlot(host: resource.location.host ?? "") {
            let response = try await client.execute(deleteRequest, deadline: .now() + .seconds(30), logger: logger)
            _ = try? await response.body.collect(upTo: 1 << 16)
            return response.status.code
        }
        logger.info("upload cancelled", metadata: ["url": "\(resource.location.redactedForLogs)", "status": "\(status.map(String.init) ?? "no answer")"])
    }
}
