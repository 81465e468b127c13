// Requests about an upload rather than its bytes: how much an existing resource holds (`HEAD`),
// giving it up (`DELETE`), and the shared way to send them and the `OPTIONS` probe.
import FerryCore
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension TransferEngine {
    /// What a `HEAD` on the upload resource says, or nil when the server has forgotten it.
    func uploadStatus(
        of resource: ResumableUploadResource, state: inout AttemptState
    ) async throws -> (offset: Int64, complete: Bool, length: Int64?, limits: UploadLimits?)? {
        let response = try await askAboutUpload(.HEAD, at: resource.location, version: resource.version, state: &state, timeout: .seconds(60))
        let code = Int(response.status.code)
        guard (200..<300).contains(code) else {
            // Busy or failing is not forgetting: a POST must not be declared lost (or a PUT
            // restarted from zero) because the server could not answer now. Ask again later.
            if code >= 500 || code == 429 || code == 408 {
                let retryAfter = RetryPolicy.parseRetryAfter(response.headers.first(name: "Retry-After"))
                let outcome: AttemptOutcome = code == 429 || code == 503 ? .answered(status: code, retryAfter: retryAfter) : .brokenAfterSending
                if let delay = state.transfer.retry.decide(outcome, for: state.retryRequest, failures: state.failures + 1).delay {
                    throw RetryLater(delay: delay, reason: "HEAD on the upload resource: HTTP \(code)")
                }
                throw FerryError(
                    .networkConnectionLost, "the upload was interrupted and the server could not say how much it has (HEAD answered \(code))",
                    url: resource.location)
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

    /// Gives up the resumable upload that `transfer.resumeUpload` names: a `DELETE`, so the
    /// server can free what it received. For an upload the user cancelled; one that is only
    /// suspended keeps its resource and continues from the server's offset. Best effort, at
    /// most `timeout`; it runs even when the calling task is cancelled. Nothing happens
    /// without a `resumeUpload`.
    ///
    /// ```swift
    /// transfer.resumeUpload = savedPoint      // from transferDidCreateUploadResource
    /// await engine.discardUpload(of: transfer)
    /// ```
    public func discardUpload(of transfer: Transfer, timeout: Duration = .seconds(10)) async {
        guard transfer.resumeUpload != nil else { return }
        let engine = self
        // Detached: the caller is usually a task being cancelled, whose requests would be too.
        await Task.detached {
            var state = AttemptState(transfer: transfer)
            guard let resource = state.uploadResource else { return }
            await engine.cancelUpload(resource, state: &state, timeout: TimeAmount(timeout))
        }.value
    }

    /// `DELETE` on the upload resource, so the server can free what it holds. Best effort:
    /// the caller gives the upload up either way.
    func cancelUpload(_ resource: ResumableUploadResource, state: inout AttemptState, timeout: TimeAmount = .seconds(30)) async {
        let status = try? await askAboutUpload(.DELETE, at: resource.location, version: resource.version, state: &state, timeout: timeout).status.code
        logger.info("upload cancelled", metadata: ["url": "\(resource.location.redactedForLogs)", "status": "\(status.map(String.init) ?? "no answer")"])
    }

    /// A bodiless request about an upload (the `OPTIONS` probe, `HEAD`, `DELETE`): the original
    /// request's fields, the interop version, a host slot; the small body is read and dropped.
    func askAboutUpload(
        _ method: HTTPMethod, at url: URL, version: ResumableUploadVersion, state: inout AttemptState, timeout: TimeAmount
    ) async throws -> HTTPClientResponse {
        // The server names the resource: its host, if another, is judged before it is asked.
        try await evaluateServerTrust(for: url, transfer: state.transfer, observer: NoObserver())
        var request = try clientRequest(to: url, for: state.transfer)
        request.method = method
        request.headers.addFields(of: state.request, for: url)
        request.headers.add(name: "Upload-Draft-Interop-Version", value: "\(version.rawValue)")
        state.requestCount += 1
        let outgoing = request
        return try await limiter.withSlot(host: url.host ?? "", admitted: state.admitted) {
            let response = try await client(for: state.transfer, url: url).execute(outgoing, deadline: .now() + timeout, logger: clientLogger)
            _ = try? await response.body.collect(upTo: 1 << 16)
            return response
        }
    }
}
