import FerryCore
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

extension TransferEngine {
    /// One attempt: redirects followed, the final response's body delivered.
    func attempt(
        _ state: inout AttemptState,
        observer: any TransferObserver,
        progress: TransferProgress
    ) async throws -> TransferResult {
        var hops = 0
        while true {
            let request = state.request
            let host = request.url.host ?? ""
            try await evaluateServerTrust(for: request.url, transfer: state.transfer, observer: observer)
            if let upload = state.transfer.upload, state.transfer.resumableUpload == .automatic,
                try await shouldUseResumableUpload(upload, request: request, state: &state)
            {
                return try await resumableUpload(upload, state: &state, observer: observer, progress: progress)
            }
            let step: Step = try await limiter.withSlot(host: host, admitted: state.admitted) {
                try await self.send(request, state: &state, hops: hops, observer: observer, progress: progress)
            }
            switch step {
            case .done(let result):
                return result
            case .redirect(let next):
                hops += 1
                state.request = next
            }
        }
    }

    enum Step {
        case done(TransferResult)
        case redirect(Request)
    }

    /// Sends `request` once (holding a host slot) and handles what comes back.
    private func send(
        _ request: Request,
        state: inout AttemptState,
        hops: Int,
        observer: any TransferObserver,
        progress: TransferProgress
    ) async throws -> Step {
        progress.touch()
        // Sent on its connection's loop, and its head came (LoopTransfer): go on from there.
        let carried = state.takeFirstResponse()
        var transaction = carried?.transaction ?? TransactionMetrics(request: request, isProxyConnection: state.transfer.proxies?.server(for: request.url) != nil)
        defer {
            // Every way out of this request: the response's end, a redirect, a retry, an error.
            if transaction.responseEndDate == nil { transaction.responseEndDate = Date() }
            observer.transferDidFinish(transaction: transaction)
        }
        var outgoing = try makeClientRequest(request, upload: state.transfer.upload, for: state.transfer, progress: progress)
        var resumeOffset: Int64 = 0
        var output: OutputFile?
        if case .file(let url, _) = state.transfer.destination {
            let file = try OutputFile(url: url)
            output = file
            if let validator = state.validator, file.size > 0 {
                resumeOffset = file.size
                outgoing.headers.replaceOrAdd(name: "Range", value: "bytes=\(resumeOffset)-")
                outgoing.headers.replaceOrAdd(name: "If-Range", value: validator)
            }
        }
        defer { output?.close() }

        state.requestCount += 1
        state.responseHeadArrived = false
        let (clientResponse, connection): (HTTPClientResponse, ConnectionUse?)
        if let carried {
            (clientResponse, connection) = (carried.response, carried.transaction.connection)
        } else {
            logger.debug("request", metadata: ["method": "\(request.method)", "url": "\(request.url.redactedForLogs)"])
            transaction.requestStartDate = Date()
            (clientResponse, connection) = try await execute(outgoing, url: request.url, for: state.transfer, proxied: transaction.isProxyConnection)
        }
        transaction.connection = connection
        // A new connection was opened first: the request was handed to it once it was open.
        if let opened = connection?.connectEndDate { transaction.requestStartDate = opened }
        state.responseHeadArrived = true
        progress.touch()
        if let upload = state.transfer.upload {
            // The body has left: report the final upload totals once.
            let length = (try? upload.length()) ?? -1
            if length >= 0 { progress.didSend(0, final: true) }
            transaction.countOfRequestBodyBytesSent = max(length, 0)
        } else {
            transaction.countOfRequestBodyBytesSent = Int64(request.body?.count ?? 0)
        }
        let response = Response(clientResponse, url: request.url)
        if carried == nil { transaction.responseStarted(response) }  // a carried one was timed as its head came
        if request.handlesCookies { state.transfer.cookies?.storeCookies(from: response.headers, for: request.url) }

        // Asked to continue a download but the range no longer fits: fetch it whole.
        if response.statusCode == 416, resumeOffset > 0, let output {
            _ = try? await clientResponse.body.collect(upTo: 1 << 20)
            try output.truncate(to: 0)
            state.validator = nil
            return .redirect(request)
        }

        // Redirects: drain the small body, ask the observer, follow.
        if response.isRedirect, let location = response.headers["Location"],
            let target = URL(string: location, relativeTo: request.url)?.absoluteURL
        {
            let next = redirected(request, to: target, status: response.statusCode, hasStreamBody: state.transfer.upload?.isSeekable == false)
            if let next {
                guard hops < configuration.maximumRedirects else {
                    throw FerryError(.httpTooManyRedirects, "more than \(configuration.maximumRedirects) redirects", url: request.url)
                }
                if let approved = await observer.transferWillRedirect(response: response, to: next) {
                    _ = try? await clientResponse.body.collect(upTo: 1 << 20)
                    return .redirect(approved)
                }
            }
        }

        // Credentials: a 401 the observer or the store answers is sent again with them.
        if response.statusCode == 401, let next = try await answerChallenge(response, request: request, state: &state, observer: observer) {
            _ = try? await clientResponse.body.collect(upTo: 1 << 20)
            return .redirect(next)
        }
        if let (credential, space) = state.pendingCredential {
            state.pendingCredential = nil
            if response.statusCode != 401, credential.keep { state.transfer.credentials?.credentialAccepted(credential, for: space) }
        }

        // Try again later, when the rulebook says so (429/503 with the policy's statuses).
        if state.transfer.retry.retryableStatuses.contains(response.statusCode) {
            let retryAfter = RetryPolicy.parseRetryAfter(response.headers["Retry-After"])
            let decision = state.transfer.retry.decide(
                .answered(status: response.statusCode, retryAfter: retryAfter), for: state.retryRequest, failures: state.failures + 1)
            if let delay = decision.delay {
                _ = try? await clientResponse.body.collect(upTo: 1 << 20)
                throw RetryLater(delay: delay, reason: decision.reason)
            }
        }

        guard await observer.transferDidReceive(response: response) else {
            throw FerryError(.cancelledByDelegate, "the delegate cancelled the task on its response", url: request.url)
        }
        let result = try await receiveBody(clientResponse, response: response, output: output, resumeOffset: resumeOffset, state: &state, observer: observer, progress: progress)
        // A download that continued (206) holds the earlier bytes too.
        transaction.countOfResponseBodyBytesReceived = response.statusCode == 206 ? max(result.bytesReceived - resumeOffset, 0) : result.bytesReceived
        return .done(result)
    }

    /// Sends a request of `transfer`: a plain one (``PlainRequest``) over the engine's own
    /// connections, which describe the connection used, any other through AsyncHTTPClient.
    func execute(_ outgoing: HTTPClientRequest, url: URL, for transfer: Transfer, proxied: Bool) async throws -> (HTTPClientResponse, ConnectionUse?) {
        if let plain = PlainRequest(outgoing, proxied: proxied) {
            return try await plainConnections.execute(plain)
        }
        return (try await client(for: transfer, url: url).execute(outgoing, deadline: .distantFuture, logger: clientLogger), nil)
    }

    /// An AsyncHTTPClient request to `url` for `transfer`: with a TLS configuration of its own
    /// when the transfer's differs from the engine's (``tlsConfiguration(for:transfer:)``;
    /// AsyncHTTPClient keeps the connections of each configuration apart). Every request of a
    /// transfer is made here.
    func clientRequest(to url: URL, for transfer: Transfer) throws -> HTTPClientRequest {
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        if url.scheme?.lowercased() == "https" {
            outgoing.tlsConfiguration = try tlsConfiguration(for: url, transfer: transfer)
        }
        return outgoing
    }

    /// Builds AsyncHTTPClient's request from ours: headers, and the body as a lazy stream.
    func makeClientRequest(
        _ request: Request, upload: UploadBody?, from offset: Int64 = 0, for transfer: Transfer, progress: TransferProgress
    ) throws -> HTTPClientRequest {
        var outgoing = try clientRequest(to: request.url, for: transfer)
        outgoing.method = HTTPMethod(rawValue: request.method.uppercased())
        for field in request.headers { outgoing.headers.add(name: field.name, value: field.value) }
        if let cookie = transfer.cookieHeader(for: request) { outgoing.headers.add(name: "Cookie", value: cookie) }
        // Data and upload answers may come gzip or deflate coded, and are decoded as they
        // arrive (ContentDecoder), as URLSession's; a download asks for the bytes as they are,
        // so that its offsets, validators and digests stay those of the file (docs/porting.md).
        // HEAD too: its answer has no body. A conditional request (a cache's revalidation) asks
        // for coding like any other: a 304 has no body, but a 200 brings the changed resource.
        if !outgoing.headers.contains(name: "Accept-Encoding") {
            let asSent: Bool = if case .file = transfer.destination { true } else { request.method.uppercased() == "HEAD" }
            outgoing.headers.add(name: "Accept-Encoding", value: asSent ? "identity" : "gzip, deflate")
        }
        if let upload {
            let length = try upload.length()
            let remaining = length.map { $0 - offset }
            progress.startSending(from: offset, expected: length ?? -1)
            let chunks = try upload.chunks(from: offset) { count in progress.didSend(count) }
            outgoing.body = .stream(chunks, length: remaining.map { .known($0) } ?? .unknown)
        } else if let body = request.body {
            progress.startSending(from: 0, expected: Int64(body.count))
            let chunks = try UploadBody.data(body).chunks(from: 0) { count in progress.didSend(count) }
            outgoing.body = .stream(chunks, length: .known(Int64(body.count)))
        }
        return outgoing
    }

    /// The request a redirect leads to, as URLSession forms it: 303 (and 301/302 after a
    /// POST) become a GET without body; credentials stay on the origin they were for.
    func redirected(_ request: Request, to target: URL, status: Int, hasStreamBody: Bool) -> Request? {
        guard let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        var next = request
        next.url = target
        let method = request.method.uppercased()
        if status == 303 || ((status == 301 || status == 302) && method == "POST") {
            if method != "HEAD" { next.method = "GET" }
            next.body = nil
            next.headers["Content-Type"] = nil
            next.headers["Content-Length"] = nil
        } else if hasStreamBody {
            return nil  // a stream cannot be sent twice
        }
        // Another origin (host, port or scheme: https to http would send them in clear) gets
        // neither the credentials nor the cookies; the jar adds the target's own.
        if request.url.host?.lowercased() != target.host?.lowercased() || request.url.port != target.port
            || request.url.scheme?.lowercased() != scheme
        {
            next.headers["Authorization"] = nil
            next.headers["Cookie"] = nil
        }
        return next
    }
}

extension Response {
    init(_ response: HTTPClientResponse, url: URL) {
        self.init(HTTPResponseHead(version: response.version, status: response.status, headers: response.headers), url: url)
    }
}
