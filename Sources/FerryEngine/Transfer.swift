public import FerryCore
public import Foundation

/// One transfer for ``TransferEngine/run(_:observer:)``: the request, its body, where the
/// response goes, and the rules for this run.
public struct Transfer: Sendable {
    public var request: Request
    /// The body to upload; nil for none (or `request.body` for a small in-memory one).
    public var upload: UploadBody?
    public var destination: Destination
    /// Give up when the whole transfer (queueing, redirects, retries) takes longer.
    public var resourceTimeout: TimeInterval?
    /// Give up when no byte moves for this long. Defaults to the engine's.
    public var idleTimeout: TimeInterval?
    public var retry: RetryPolicy
    public var resumableUpload: ResumableUploadMode
    /// An upload resource an earlier run created (reported by
    /// ``TransferObserver/transferDidCreateUploadResource(_:)``): the upload continues from
    /// the offset the server confirms for it (`HEAD`), or starts anew if the server forgot it.
    /// This is how a process that persisted the resource (ferryd) resumes after a restart.
    public var resumeUpload: ResumableUploadPoint?
    /// PEM files of certificate authorities this transfer trusts besides the system's and the
    /// engine's (a background session's own, carried by ferryd's single engine).
    public var additionalTrustedCertificateFiles: [String] = []
    /// The certificate and key presented to servers that ask for one, instead of the engine's
    /// (a background session's own).
    public var clientIdentity: ClientIdentity?
    /// Answers the questions about connections (server trust, client certificates) for the
    /// transfer's session; nil: the standard rules and the identity above.
    public var connectionChallenges: (any ConnectionChallengeHandler)?
    /// false: HTTP/1.1 even where the engine offers HTTP/2 (a background session's own `allowsHTTP2`).
    public var allowsHTTP2 = true
    /// Cookies sent with every request of the transfer and stored from every response
    /// (unless the request says `handlesCookies = false` or sets its own `Cookie` header).
    public var cookies: (any CookieJar)?
    /// The `Cookie` header the jar gives `request`: none when the request handles no cookies
    /// or sets its own. Every request the engine sends asks here, and so does a library that
    /// hands the request to ferryd.
    public func cookieHeader(for request: Request) -> String? {
        guard request.handlesCookies, request.headers["Cookie"] == nil else { return nil }
        return cookies?.cookieHeader(for: request.url)
    }

    /// Default credentials for `401` challenges the observer leaves to default handling, and
    /// where accepted ones are kept; the URL's own user and password come after it.
    public var credentials: (any CredentialSource)?
    /// The proxies the transfer's requests go through (each request's URL picks one, or none).
    public var proxies: ProxySettings?
    /// Where a `GET` into memory may be answered from and its response kept (``HTTPCache``'s
    /// rules), and how the request may use it.
    public var cache: (any ResponseCache)?
    public var cacheUse: CacheUse = .useProtocolCachePolicy

    public init(
        request: Request,
        upload: UploadBody? = nil,
        destination: Destination = .memory(limit: 64 << 20),
        resourceTimeout: TimeInterval? = nil,
        idleTimeout: TimeInterval? = nil,
        retry: RetryPolicy = .none,
        resumableUpload: ResumableUploadMode = .automatic
    ) {
        self.request = request
        self.upload = upload
        self.destination = destination
        self.resourceTimeout = resourceTimeout
        self.idleTimeout = idleTimeout
        self.retry = retry
        self.resumableUpload = resumableUpload
    }
}

/// Where the response body goes.
public enum Destination: Sendable {
    /// Kept in memory up to `limit` bytes (more fails with `dataLengthExceedsMaximum`),
    /// and each chunk is also passed to the observer.
    case memory(limit: Int)
    /// Each chunk is passed to the observer and nothing is kept.
    case stream
    /// Written to `file`. With a `resume` point and a matching validator the download
    /// continues after the bytes already in the file (`Range` + `If-Range`); when the
    /// resource changed, the file is truncated and filled with the new version.
    case file(URL, resume: ResumePoint?)
}

/// Where an interrupted download stopped, and the validator of what it was fetching.
public struct ResumePoint: Sendable, Hashable, Codable {
    /// Bytes already in the file.
    public var offset: Int64
    /// A strong ETag, else a Last-Modified date: sent as `If-Range`.
    public var validator: String

    public init(offset: Int64, validator: String) {
        self.offset = offset
        self.validator = validator
    }
}

/// A server-side resumable upload: where it is and the draft version it speaks. Persist it
/// to continue the upload after the process restarts.
///
/// ```swift
/// var transfer = Transfer(request: request, upload: .file(photo))
/// transfer.resumeUpload = ResumableUploadPoint(location: savedURL, interopVersion: 6)
/// ```
public struct ResumableUploadPoint: Sendable, Hashable, Codable {
    public var location: URL
    /// The `Upload-Draft-Interop-Version` the resource was created with.
    public var interopVersion: Int

    public init(location: URL, interopVersion: Int) {
        self.location = location
        self.interopVersion = interopVersion
    }
}

/// How an upload uses the IETF resumable-upload protocol.
public enum ResumableUploadMode: Sendable, Hashable {
    /// Ask the server (one `OPTIONS`) for bodies of 1 MiB or more whose length is known
    /// and that can be read again; fall back to a plain upload when it does not speak it.
    case automatic
    /// Never: a plain request.
    case disabled
}

/// Answers from the app about a transfer in progress. Every method has a default.
///
/// The engine calls these in order for one transfer; the progress calls are cheap and
/// synchronous (coalesced to a few per second, the last one always carrying the totals).
public protocol TransferObserver: Sendable {
    /// The final response head (after redirects). Return false to cancel the transfer.
    func transferDidReceive(response: Response) async -> Bool
    /// The final response head, taken without suspending when the observer can answer at once:
    /// what ``transferDidReceive(response:)`` would return, or nil when it must be asked that
    /// way (it waits for someone, a delegate's decision) and has taken nothing. The engine
    /// calls one of the two for a response, never both: this one where it cannot wait (a
    /// transfer carried on its connection's event loop), and it goes on in a task on nil.
    func transferDidReceiveAtOnce(response: Response) -> Bool?
    /// A redirect is about to be followed; return the request to send, or nil to stop and
    /// deliver the redirect response itself.
    func transferWillRedirect(response: Response, to request: Request) async -> Request?
    /// A `401` asks for credentials: what to do (``ChallengeAnswer``).
    func transferDidReceive(challenge: AuthenticationChallenge) async -> ChallengeAnswer
    /// A request ended (redirected, answered, retried or failed), with its times and counts.
    func transferDidFinish(transaction: TransactionMetrics)
    /// A chunk of the response body (for `.memory` and `.stream` destinations).
    func transferDidReceive(data: Data) async
    /// Upload progress.
    func transferDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64)
    /// Download progress; `totalBytesWritten` counts bytes kept from an earlier attempt.
    func transferDidWrite(bytes: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64)
    /// The body was (re)started from `offset`; resumed uploads and downloads say where.
    func transferDidResume(atOffset offset: Int64, expectedTotal: Int64)
    /// A retry is scheduled after `delay` because of `reason`.
    func transferWillRetry(after delay: Duration, reason: String)
    /// The server created a resumable upload resource for this upload; keep it to resume
    /// after a restart (``Transfer/resumeUpload``).
    func transferDidCreateUploadResource(_ point: ResumableUploadPoint)
}

extension TransferObserver {
    public func transferDidReceive(response: Response) async -> Bool { true }
    public func transferDidReceiveAtOnce(response: Response) -> Bool? { nil }
    public func transferWillRedirect(response: Response, to request: Request) async -> Request? { request }
    public func transferDidReceive(challenge: AuthenticationChallenge) async -> ChallengeAnswer { .performDefaultHandling }
    public func transferDidFinish(transaction: TransactionMetrics) {}
    public func transferDidReceive(data: Data) async {}
    public func transferDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
    public func transferDidWrite(bytes: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {}
    public func transferDidResume(atOffset offset: Int64, expectedTotal: Int64) {}
    public func transferWillRetry(after delay: Duration, reason: String) {}
    public func transferDidCreateUploadResource(_ point: ResumableUploadPoint) {}
}

/// An observer that wants nothing.
public struct NoObserver: TransferObserver {
    public init() {}
}

/// What a finished transfer produced.
public struct TransferResult: Sendable {
    public var response: Response
    /// The body, for `.memory` destinations.
    public var body: Data?
    /// Bytes of the body now in the destination (file size for downloads).
    public var bytesReceived: Int64
    public var bytesSent: Int64
    /// The validator of the downloaded representation, usable as a ``ResumePoint``.
    public var validator: String?
    /// How many requests were sent in all (redirects, retries, resumable-upload steps).
    public var requestCount: Int
}
