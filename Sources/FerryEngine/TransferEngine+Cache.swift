import FerryCore
import Foundation

extension TransferEngine {
    /// Runs `transfer`, answered from its cache when ``HTTPCache`` allows (a `GET` into
    /// memory, without a body): a fresh entry without a request, a stale one after the
    /// server's `304`; a response that may be kept is stored.
    func runThroughCache(
        _ transfer: Transfer, observer: any TransferObserver, progress: TransferProgress, admitted: HostSlot?, first: FirstRequest? = nil
    ) async throws -> TransferResult {
        if let cache = transfer.cache, !["GET", "HEAD", "OPTIONS", "TRACE"].contains(transfer.request.method.uppercased()) {
            // A write that succeeded makes what was kept for its URL out of date (§4.4).
            let result = try await runWithRetries(transfer, observer: observer, progress: progress, admitted: admitted)
            if result.response.statusCode < 400 { cache.removeEntry(for: Request(url: transfer.request.url)) }
            return result
        }
        guard let cache = transfer.cache, transfer.request.method == "GET", transfer.upload == nil, transfer.request.body == nil,
            case .memory = transfer.destination
        else { return try await runWithRetries(transfer, observer: observer, progress: progress, admitted: admitted, first: first) }
        let original = transfer.request
        let requestDate = Date()
        var transfer = transfer
        var stale: CachedResponse?
        switch HTTPCache.decide(cache.entry(for: original), use: transfer.cacheUse, request: original, now: requestDate) {
        case .serve(let entry):
            return try await serve(entry, observer: observer, url: original.url)
        case .unavailable:
            throw FerryError(.resourceUnavailable, "the cache has no answer for this request, and it may not be loaded (returnCacheDataDontLoad)", url: original.url)
        case .load:
            break
        case .revalidate(let entry, let conditions):
            stale = entry
            for (name, value) in conditions where transfer.request.headers[name] == nil { transfer.request.headers[name] = value }
        }
        let result = try await runWithRetries(transfer, observer: stale.map { RevalidationObserver(entry: $0, inner: observer) } ?? observer, progress: progress, admitted: admitted)
        let now = Date()
        if let stale, result.response.statusCode == 304 {
            let refreshed = HTTPCache.refreshed(stale, with: result.response, requestDate: requestDate, now: now)
            cache.store(refreshed, for: original)
            logger.debug("answered from the cache after revalidation", metadata: ["url": "\(original.url.redactedForLogs)"])
            return TransferResult(
                response: refreshed.response, body: refreshed.body, bytesReceived: Int64(refreshed.body.count), bytesSent: 0,
                validator: nil, requestCount: result.requestCount)
        }
        if transfer.cacheUse != .reloadIgnoringLocalAndRemoteCacheData, let body = result.body, result.response.url == original.url,
            HTTPCache.isStorable(result.response, for: original)
        {
            cache.store(CachedResponse(response: result.response, body: body, requestDate: requestDate, responseDate: now), for: original)
        }
        return result
    }

    /// The entry as the transfer's answer: the observer sees its response and body as if they arrived.
    private func serve(_ entry: CachedResponse, observer: any TransferObserver, url: URL) async throws -> TransferResult {
        logger.debug("answered from the cache", metadata: ["url": "\(url.redactedForLogs)"])
        guard await observer.transferDidReceive(response: entry.response) else {
            throw FerryError(.cancelledByDelegate, "the delegate cancelled the task on its response", url: url)
        }
        if !entry.body.isEmpty { await observer.transferDidReceive(data: entry.body) }
        return TransferResult(
            response: entry.response, body: entry.body, bytesReceived: Int64(entry.body.count), bytesSent: 0, validator: nil, requestCount: 0)
    }
}

/// While a stale entry is revalidated: a `304` reaches the task as the entry's response and
/// body, anything else as it is.
private struct RevalidationObserver: TransferObserver {
    let entry: CachedResponse
    let inner: any TransferObserver

    func transferDidReceive(response: Response) async -> Bool {
        guard response.statusCode == 304 else { return await inner.transferDidReceive(response: response) }
        let refreshed = HTTPCache.refreshed(entry, with: response, requestDate: Date(), now: Date())
        guard await inner.transferDidReceive(response: refreshed.response) else { return false }
        if !entry.body.isEmpty { await inner.transferDidReceive(data: entry.body) }
        return true
    }

    func transferWillRedirect(response: Response, to request: Request) async -> Request? {
        await inner.transferWillRedirect(response: response, to: request)
    }
    func transferDidReceive(challenge: AuthenticationChallenge) async -> ChallengeAnswer { await inner.transferDidReceive(challenge: challenge) }
    func transferDidFinish(transaction: TransactionMetrics) { inner.transferDidFinish(transaction: transaction) }
    func transferDidReceive(data: Data) async { await inner.transferDidReceive(data: data) }
    func transferDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        inner.transferDidSend(bytes: bytes, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
    }
    func transferDidWrite(bytes: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        inner.transferDidWrite(bytes: bytes, totalBytesWritten: totalBytesWritten, totalBytesExpectedToWrite: totalBytesExpectedToWrite)
    }
    func transferDidResume(atOffset offset: Int64, expectedTotal: Int64) { inner.transferDidResume(atOffset: offset, expectedTotal: expectedTotal) }
    func transferWillRetry(after delay: Duration, reason: String) { inner.transferWillRetry(after: delay, reason: reason) }
    func transferDidCreateUploadResource(_ point: ResumableUploadPoint) { inner.transferDidCreateUploadResource(point) }
}
