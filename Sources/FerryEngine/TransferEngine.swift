import FerryCore
import AsyncHTTPClient
import Foundation
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Carries out HTTP transfers: one connection pool, per-host limits, time-outs, redirects,
/// retries, resumed downloads and resumable uploads. It keeps nothing on disk of its own:
/// it reports, and whoever runs it (an in-process session, ferryd) decides what to keep.
///
/// ```swift
/// let engine = try TransferEngine(configuration: EngineConfiguration())
/// let result = try await engine.run(
///     Transfer(request: Request(url: URL(string: "http://127.0.0.1:8080/big.iso")!),
///              destination: .file(URL(fileURLWithPath: "/tmp/big.iso"), resume: nil)))
/// print(result.response.statusCode, result.bytesReceived)
/// try await engine.shutdown()
/// ```
public final class TransferEngine: Sendable {
    public let configuration: EngineConfiguration
    let client: HTTPClient
    /// For transfers that must not use HTTP/2 while the engine may (a background session whose
    /// configuration says `allowsHTTP2 = false`): AsyncHTTPClient picks the protocol per client.
    /// nil when the engine itself speaks HTTP/1.1 only.
    let http1Client: HTTPClient?
    /// The base configuration the clients share, and the clients made for proxies (one per
    /// proxy server and HTTP version; AsyncHTTPClient takes its proxy per client), made on
    /// first use and closed with the engine.
    private let clientConfiguration: HTTPClient.Configuration
    private let proxiedClients = NIOLockedValueBox<[ProxiedClientKey: HTTPClient]>([:])
    private struct ProxiedClientKey: Hashable {
        var server: ProxySettings.Server
        var http1Only: Bool
    }
    /// Kept-alive connections for plain `http` requests without a body (``PlainHTTPConnections``).
    let plainConnections: PlainHTTPConnections
    let limiter: HostLimiter
    let sleeper: any Sleeper
    let logger: Logger
    /// What AsyncHTTPClient logs through: the engine's logger when it shows debug messages,
    /// otherwise one that drops everything. (AsyncHTTPClient sets metadata on the logger it is
    /// given for every request, and a stream handler formats its metadata on each set: a
    /// fortieth of a small download's CPU, for messages below the level shown.)
    let clientLogger: Logger
    let resumableSupport = ResumableSupportCache()
    let timeouts = TransferTimeouts()
    let tls = TLSState()

    public init(
        configuration: EngineConfiguration,
        sleeper: any Sleeper = ContinuousSleeper(),
        logger: Logger = Logger(label: "ferry.engine")
    ) throws {
        self.configuration = configuration
        self.sleeper = sleeper
        self.logger = logger
        self.clientLogger = logger.logLevel <= .debug ? logger : Logger(label: logger.label, factory: { _ in SwiftLogNoOpLogHandler() })
        self.limiter = HostLimiter(limit: configuration.maximumConnectionsPerHost)
        self.plainConnections = PlainHTTPConnections(configuration: configuration)

        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        tlsConfiguration.additionalTrustRoots = configuration.additionalTrustedCertificateFiles.map { .file($0) }
        if let identity = configuration.clientIdentity {
            try tls.present(identity, in: &tlsConfiguration, url: URL(fileURLWithPath: identity.files[0]))
        }
        var clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tlsConfiguration,
            redirectConfiguration: .disallow,  // followed here, so a delegate can refuse one
            timeout: .init(connect: .seconds(Int64(min(configuration.idleTimeout, 60).rounded(.up)))),
            connectionPool: .init(
                idleTimeout: .milliseconds(Int64(configuration.connectionIdleTimeout * 1000)),
                concurrentHTTP1ConnectionsPerHostSoftLimit: configuration.maximumConnectionsPerHost),
            // gzip and deflate bodies are decoded by the engine (ContentDecoder), only for the
            // answers that are coded.
            decompression: .disabled)
        // A refused connection is an answer; AHC would otherwise retry it until the deadline.
        clientConfiguration.connectionPool.retryConnectionEstablishment = false
        clientConfiguration.httpVersion = configuration.allowsHTTP2 ? .automatic : .http1Only
        // No spans: Ferry reports its own metrics (URLSessionTaskMetrics), and AHC's default
        // tracer (a no-op unless one is bootstrapped) still parsed each request's URL again.
        clientConfiguration.tracing.tracer = nil
        self.clientConfiguration = clientConfiguration
        self.client = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: clientConfiguration)
        var http1 = clientConfiguration
        http1.httpVersion = .http1Only
        self.http1Client = configuration.allowsHTTP2
            ? HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: http1) : nil
    }

    /// The client for a request of `transfer` to `url`: through the transfer's proxy for that
    /// URL if it has one, the HTTP/1.1-only one when it must not use HTTP/2.
    func client(for transfer: Transfer, url: URL) -> HTTPClient {
        let http1Only = !transfer.allowsHTTP2 || !configuration.allowsHTTP2
        guard let server = transfer.proxies?.server(for: url) else { return http1Only ? (http1Client ?? client) : client }
        return proxiedClients.withLockedValue { clients in
            let key = ProxiedClientKey(server: server, http1Only: http1Only)
            if let made = clients[key] { return made }
            var configuration = clientConfiguration
            configuration.proxy = .server(
                host: server.host, port: server.port,
                authorization: server.user.map { .basic(username: $0, password: server.password ?? "") })
            if http1Only { configuration.httpVersion = .http1Only }
            let made = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)
            clients[key] = made
            return made
        }
    }

    /// Closes the pool. Transfers still running fail.
    public func shutdown() async throws {
        timeouts.stop()
        await plainConnections.shutdown()
        try await client.shutdown()
        try await http1Client?.shutdown()
        for proxied in proxiedClients.withLockedValue({ clients in defer { clients = [:] }; return Array(clients.values) }) {
            try await proxied.shutdown()
        }
    }

    deinit {
        // An engine dropped without `shutdown()` still closes its pool (AHC requires it);
        // the client stays alive until that is done.
        timeouts.stop()
        plainConnections.shutdownNow()
        client.shutdown().whenComplete { _ in }
        http1Client?.shutdown().whenComplete { _ in }
        for proxied in proxiedClients.withLockedValue({ Array($0.values) }) { proxied.shutdown().whenComplete { _ in } }
    }

    /// Runs `transfer` to its end: the final response and where its body went, or a
    /// ``FerryError``. Cancel the calling task to cancel the transfer.
    public func run(_ transfer: Transfer, observer: any TransferObserver = NoObserver()) async throws -> TransferResult {
        let host = try Self.host(of: transfer)
        let progress = TransferProgress(observer: observer)
        // The transfer runs as a task of its own, so that the engine's watch can end it alone
        // (and say why); cancelling the caller cancels it too.
        let work = Task {
            try await self.runAdmitted(transfer, host: host, observer: observer, progress: progress)
        }
        return try await watched(transfer, progress: progress, cancel: { work.cancel() }) {
            try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() }
        }
    }

    /// Runs `transfer` to its end in the calling task, which is the transfer's alone: `cancel`
    /// cancels that task, and a time-out calls it. (A session that asks about the network
    /// waits for it in its run's task, then here for its host's turn: ``turn(for:observer:ready:)``
    /// is for the others.)
    package func run(
        _ transfer: Transfer, observer: any TransferObserver, cancellingWith cancel: @escaping @Sendable () -> Void
    ) async throws -> TransferResult {
        let host = try Self.host(of: transfer)
        let progress = TransferProgress(observer: observer)
        return try await watched(transfer, progress: progress, cancel: cancel) {
            try await self.runAdmitted(transfer, host: host, observer: observer, progress: progress)
        }
    }

    /// The host a transfer connects to; its URL refused when it has none or names a scheme
    /// other than http and https.
    static func host(of transfer: Transfer) throws(FerryError) -> String {
        let url = transfer.request.url
        guard let scheme = url.scheme?.lowercased() else {
            throw FerryError(.badURL, "the URL has no scheme", url: url)
        }
        guard scheme == "http" || scheme == "https" else {
            throw FerryError(.unsupportedURL, "\(scheme): URLs are not supported; use http or https", url: url)
        }
        guard let host = url.host, !host.isEmpty else {
            throw FerryError(.badURL, "the URL has no host", url: url)
        }
        return host
    }

    /// The transfer's work, once its host's turn came: before any of it, so that a transfer
    /// queued behind `maximumConnectionsPerHost` holds this frame only, not its whole call
    /// chain suspended in `attempt` (about 20 KiB each, with thousands queued).
    private func runAdmitted(_ transfer: Transfer, host: String, observer: any TransferObserver, progress: TransferProgress) async throws -> TransferResult {
        let admitted = try await limiter.admit(host: host)
        defer { admitted.releaseIfUnused() }
        return try await runThroughCache(transfer, observer: observer, progress: progress, admitted: admitted)
    }

    /// `work` under the engine's watch: `cancel` ends it when it stalls or outlives its
    /// deadline, and its error is then the time-out's.
    private func watched(
        _ transfer: Transfer, progress: TransferProgress, cancel: @escaping @Sendable () -> Void,
        _ work: () async throws -> TransferResult
    ) async throws -> TransferResult {
        let watch = TransferWatch(progress: progress)
        watch.stop(with: cancel)
        let identifier = self.watch(limits(of: transfer), with: watch)
        defer { unwatch(identifier) }
        return try await mappingTimeOut(of: transfer, watch: watch, work)
    }

    /// The time-outs of `transfer`, the engine's where it sets none.
    func limits(of transfer: Transfer) -> TransferTimeouts.Limits {
        let idle = transfer.idleTimeout ?? configuration.idleTimeout
        return TransferTimeouts.Limits(
            idle: .milliseconds(Int64(idle * 1000)), resource: transfer.resourceTimeout.map { .milliseconds(Int64($0 * 1000)) },
            url: transfer.request.url)
    }

    /// Watches a transfer for its time-outs from now (``TransferTimeouts``), which expire
    /// `watch`, until ``unwatch(_:)`` with the number returned.
    func watch(_ limits: TransferTimeouts.Limits, with watch: TransferWatch) -> Int {
        timeouts.watch(TransferTimeouts.Watched(
            progress: watch.progress, idle: limits.idle, deadline: limits.resource.map { ContinuousClock.now + $0 }, url: limits.url
        ) { error in watch.expire(error) })
    }

    func unwatch(_ identifier: Int) {
        timeouts.unwatch(identifier)
    }

    /// `work`'s outcome, its error the time-out's when one stopped it.
    func mappingTimeOut(of transfer: Transfer, watch: TransferWatch, _ work: () async throws -> TransferResult) async throws -> TransferResult {
        let url = transfer.request.url
        do {
            return try await work()
        } catch {
            let mapped = watch.timedOut ?? FerryError.from(error, url: url)
            logger.debug("transfer failed", metadata: ["url": "\(url.redactedForLogs)", "error": "\(mapped.shortDescription)"])
            throw mapped
        }
    }

    /// Attempts until one succeeds or the rulebook (``RetryPolicy/decide(_:for:failures:timeLeft:random:)``)
    /// says the response or the failure is the answer.
    /// `first`: the transfer's first request, sent on its connection's loop (``LoopTransfer``),
    /// taken up as the first attempt's.
    func runWithRetries(
        _ transfer: Transfer, observer: any TransferObserver, progress: TransferProgress, admitted: HostSlot?, first: FirstRequest? = nil
    ) async throws -> TransferResult {
        var state = AttemptState(transfer: transfer, resendsWhenClosedBeforeResponse: configuration.resendsWhenClosedBeforeResponse)
        state.admitted = admitted
        state.first = first
        while true {
            let delay: Duration
            let reason: String
            do {
                if let failed = state.takeFirstFailure() { throw failed }
                return try await self.attempt(&state, observer: observer, progress: progress)
            } catch let retry as RetryLater {
                (delay, reason) = (retry.delay, retry.reason)
            } catch let error {
                let mapped = FerryError.from(error, url: state.request.url)
                let outcome = mapped.attemptOutcome(responseArrived: state.responseHeadArrived, bodyDelivered: state.deliveredBodyBytes > 0)
                let decision = transfer.retry.decide(outcome, for: state.retryRequest, failures: state.failures + 1)
                switch decision {
                case .retryNow:
                    // Most often a pooled keep-alive connection the server had just closed: an
                    // idempotent request goes again at once, whatever the policy, as URLSession
                    // does (RFC 9110 §9.2.2).
                    state.immediateRetryUsed = true
                    logger.debug("sending again at once", metadata: ["url": "\(transfer.request.url.redactedForLogs)", "error": "\(mapped.shortDescription)"])
                    progress.touch()
                    continue
                case .retryAfter(let wait, _, _), .resume(let wait, _, _):
                    (delay, reason) = (wait, mapped.message)
                case .deliver, .fail, .outOfTime:
                    throw mapped
                }
            }
            state.failures += 1
            logger.info("retrying", metadata: ["url": "\(transfer.request.url.redactedForLogs)", "after": "\(delay)", "reason": "\(reason)"])
            observer.transferWillRetry(after: delay, reason: reason)
            // A transfer waiting to try again holds no turn of its host's (an admitted slot no
            // request took goes back; the next attempt waits for one like any request).
            state.admitted?.releaseIfUnused()
            try await sleeper.sleep(for: delay)
            progress.touch()
        }
    }
}

/// A response the rulebook says to try again after (`503` + `Retry-After`, or the backoff).
struct RetryLater: Error {
    var delay: Duration
    var reason: String
}

/// What one transfer has learnt across its attempts.
struct AttemptState {
    var transfer: Transfer
    var request: Request
    /// The slot the transfer was admitted with, for its first request to that host.
    var admitted: HostSlot?
    /// Requests sent so far, all attempts together.
    var requestCount = 0
    /// The validator of the representation the download file holds.
    var validator: String?
    /// A resumable upload's resource and protocol version, once created.
    var uploadResource: ResumableUploadResource?
    /// Failed attempts so far (the immediate resend is not one).
    var failures = 0
    /// The server keeps the upload's resource: a new attempt continues from its offset.
    var continuesUpload = false
    let resendsWhenClosedBeforeResponse: Bool
    /// Body bytes passed to the observer so far (memory and stream destinations).
    var deliveredBodyBytes: Int64 = 0
    /// Whether the last request sent got a response head (false: it failed before one).
    var responseHeadArrived = false
    /// The one immediate resend after a connection closed before any response was used.
    var immediateRetryUsed = false
    /// Credentials sent for each protection space (a `401` after one is its refusal).
    var credentialsSent: [ProtectionSpace: Int] = [:]
    /// The credential the last request carried, reported accepted when no `401` follows.
    var pendingCredential: (Credential, ProtectionSpace)?
    /// The first request, when it was sent on its connection's loop and the rest came here.
    var first: FirstRequest?
    var writesToFile: Bool {
        if case .file = transfer.destination { return true }
        return false
    }

    /// What the rulebook needs to know about sending the current request again.
    var retryRequest: RetryRequest {
        RetryRequest(
            method: request.method, body: transfer.upload?.isSeekable == false ? .stream : .repeatable,
            resumes: continuesUpload || (writesToFile && validator != nil),
            deliveredBody: deliveredBodyBytes > 0 && !writesToFile,
            immediateResendAvailable: resendsWhenClosedBeforeResponse && !immediateRetryUsed)
    }

    /// The first request's failure on its loop, as if this attempt had failed so.
    mutating func takeFirstFailure() -> FerryError? {
        guard case .failed(let error, let responseArrived, let validator)? = first?.outcome else { return nil }
        first = nil
        requestCount += 1
        responseHeadArrived = responseArrived
        if let validator { self.validator = validator }
        return error
    }

    /// The first request's response, whose head came on its loop, for `send` to go on with.
    mutating func takeFirstResponse() -> (response: HTTPClientResponse, transaction: TransactionMetrics)? {
        guard case .response(let response, let transaction)? = first?.outcome else { return nil }
        first = nil
        return (response, transaction)
    }

    init(transfer: Transfer, resendsWhenClosedBeforeResponse: Bool = true) {
        self.transfer = transfer
        self.request = transfer.request
        self.resendsWhenClosedBeforeResponse = resendsWhenClosedBeforeResponse
        if case .file(_, let resume?) = transfer.destination { validator = resume.validator }
        if let point = transfer.resumeUpload, let version = ResumableUploadVersion(rawValue: point.interopVersion) {
            uploadResource = ResumableUploadResource(location: point.location, version: version)
            continuesUpload = true  // the server's offset says what it has
        }
    }
}
