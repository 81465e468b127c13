public import FerryCore
public import FerryEngine
public import Foundation
public import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// Many whole-file GET downloads over a few kept-alive HTTP/1.1 connections per host, each
/// connection driven by its event loop: the shape of `curl --parallel`, for mirroring a list.
///
/// A `Session` gives each download its own task, delegate calls and retry bookkeeping, and
/// every one of those crosses between SwiftNIO's event loops and Swift's thread pool. For a
/// thousand 16 KiB files that crossing costs more than the transfer. A batch instead keeps
/// each connection's requests, reads and file writes on its event loop, one after another,
/// and writes each body into an unnamed file (`O_TMPFILE`) that is linked under its name
/// only once it is whole and its digests match: a batch that is killed leaves no partial file.
///
/// `http` and `https` (TLS with the system's trust store, HTTP/1.1 by ALPN). A batch does the
/// plain case; a redirect, a connection that could not be made (TLS refused included) or that
/// broke twice is handed back to the caller, who should give those items to a `Session`
/// (which follows redirects, reports the precise error, speaks HTTP/2). Any other status is
/// the item's answer (as in `URLSession`, a status is a response, not an error), except those
/// `retryPolicy` retries: asked again after `Retry-After` (or the policy's backoff). Final
/// failures are a digest that does not match (`Repr-Digest`, `Content-Digest`), a file that
/// cannot be written, and a time-out when `handsBackTimeouts` is false.
///
/// ```swift
/// let items = urls.map { BatchDownload.Item(url: $0, destination: "/srv/mirror/" + $0.lastPathComponent) }
/// var batch = BatchDownload()
/// batch.connectionsPerHost = 6
/// let outcomes = await batch.run(items)
/// for (item, outcome) in zip(items, outcomes) {
///     if case .handedBack = outcome { _ = try await session.download(for: Request(url: item.url)) }
/// }
/// ```
public struct BatchDownload: Sendable {
    /// One file to fetch: the URL and the path it is saved at (replaced if it exists).
    public struct Item: Sendable, Hashable {
        public var url: URL
        public var destination: String
        public init(url: URL, destination: String) {
            self.url = url
            self.destination = destination
        }
    }

    /// What became of one item.
    public enum Outcome: Sendable {
        /// The body is at the item's destination, `bytes` long.
        case saved(bytes: Int64)
        /// The server's final answer was this status (not 2xx, not a redirect); nothing saved.
        case answered(status: Int)
        /// A final failure: nothing was saved, and trying again elsewhere would not help.
        case failed(FerryError)
        /// Not done here, for the reason given; a `Session` should download the item.
        case handedBack(String)
    }

    /// Connections opened to each host (`httpMaximumConnectionsPerHost`).
    public var connectionsPerHost = 6
    /// Connections open at once over every host (curl's `--parallel-max`).
    public var maximumConnections = 64
    /// Added to every request (`Host` is set from the URL unless given here).
    public var headers = HeaderFields()
    /// Fails a request when no byte arrives for this long (`timeoutIntervalForRequest`).
    public var idleTimeout: Duration = .seconds(60)
    /// Fails a request that takes longer than this in all (`timeoutIntervalForResource`).
    public var resourceTimeout: Duration? = nil
    /// Whether a request that timed out is handed back (the caller retries) or failed.
    public var handsBackTimeouts = false
    /// Statuses asked again (`retryableStatuses`, e.g. 429 and 503) after `Retry-After` or the
    /// policy's backoff, up to `maximumAttempts` requests per item; a `Retry-After` beyond
    /// `maximumRetryAfter` ends the item with that status. `.none`: every status is the answer.
    public var retryPolicy: RetryPolicy = .none
    /// PEM files of certificate authorities to trust besides the system's store (`https`).
    public var additionalTrustedCertificateFiles: [String] = []
    public var logger = Logger(label: "ferry.batch")

    public init() {}

    /// Downloads `items`; the outcomes come back in the same order. The connections are
    /// spread over `eventLoopGroup`'s loops (by default one per core). `onOutcome` is called
    /// once per item as it ends, from an event loop: keep it short (a progress display).
    /// Cancelling the calling task stops the batch: the connections close, what was not
    /// saved ends as `failed` with `cancelled`, and no partial file is left.
    public func run(
        _ items: [Item],
        on eventLoopGroup: (any EventLoopGroup)? = nil,
        onOutcome: @escaping @Sendable (Int, Outcome) -> Void = { _, _ in }
    ) async -> [Outcome] {
        guard !items.isEmpty else { return [] }
        let batch = BatchRun(items: items, settings: self, group: eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton,
                             onOutcome: onOutcome)
        await withTaskCancellationHandler {
            batch.start()
            try? await batch.finished.futureResult.get()
        } onCancel: {
            batch.cancel()
        }
        return batch.outcomes
    }
}

/// The shared state of one `BatchDownload.run`: the queue of items per host, the outcomes,
/// how many connections each host has. Connections on several event loops take items from
/// it, so it sits behind a lock (held for a few instructions per request).
final class BatchRun: Sendable {
    typealias HostKey = ConnectionPlan.HostKey

    struct State {
        var plan: ConnectionPlan
        var outcomes: [BatchDownload.Outcome?]
        /// Requests sent again for an item after a connection closed before any answer.
        var resends: [UInt8]
        /// Requests an item got a retryable status for.
        var statusAttempts: [Int32]
        /// The open connections, to close them when the batch is cancelled.
        var channels: [ObjectIdentifier: any Channel] = [:]
        /// Items waiting out a `Retry-After`.
        var retrying: Set<Int> = []
        var cancelled = false
        var remaining: Int
    }

    let items: [BatchDownload.Item]
    let settings: BatchDownload
    let group: any EventLoopGroup
    let onOutcome: @Sendable (Int, BatchDownload.Outcome) -> Void
    let finished: EventLoopPromise<Void>
    private let state: Mutex<State>
    private let encodedHeaders: HTTPHeaders
    /// Made once per run, and only when an item is `https` (it reads the trust store).
    private let tls: Result<NIOSSLContext, any Error>?

    init(items: [BatchDownload.Item], settings: BatchDownload, group: any EventLoopGroup,
         onOutcome: @escaping @Sendable (Int, BatchDownload.Outcome) -> Void) {
        self.items = items
        self.settings = settings
        self.group = group
        self.onOutcome = onOutcome
        self.finished = group.next().makePromise()
        self.state = Mutex(State(plan: ConnectionPlan(perHost: settings.connectionsPerHost, total: settings.maximumConnections),
                                 outcomes: Array(repeating: nil, count: items.count),
                                 resends: Array(repeating: 0, count: items.count),
                                 statusAttempts: Array(repeating: 0, count: items.count), remaining: items.count))
        var headers = HTTPHeaders()
        for field in settings.headers { headers.add(name: field.name, value: field.value) }
        self.encodedHeaders = headers
        if items.contains(where: { $0.url.scheme?.lowercased() == "https" }) {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.additionalTrustRoots = settings.additionalTrustedCertificateFiles.map { .file($0) }
            configuration.applicationProtocols = ["http/1.1"]
            tls = Result { try NIOSSLContext(configuration: configuration) }
        } else {
            tls = nil
        }
    }

    var outcomes: [BatchDownload.Outcome] {
        state.withLock { $0.outcomes.map { $0 ?? .handedBack("the batch ended without this item") } }
    }

    func start() {
        let unsupported = changePlan { state in
            var unsupported: [Int] = []
            for (index, item) in items.enumerated() {
                guard let key = Self.hostKey(item.url) else {
                    unsupported.append(index)
                    continue
                }
                state.plan.add(index, to: key)
            }
            return unsupported
        }
        for index in unsupported {
            finish(index, .handedBack("a batch speaks http and https to a host; this URL goes through a session"))
        }
    }

    /// Changes the plan under the lock, then opens the connections it now grants.
    @discardableResult
    private func changePlan<T>(_ change: (inout State) -> T) -> T {
        let (result, grants) = state.withLock { state in
            let result = change(&state)
            return (result, state.plan.grants())
        }
        for key in grants { connect(key) }
        return result
    }

    static func hostKey(_ url: URL) -> HostKey? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return nil }
        let secure = scheme == "https"
        return HostKey(host: host, port: url.port ?? (secure ? 443 : 80), secure: secure)
    }

    /// The next item for a connection to `key`, if any is left.
    func next(_ key: HostKey) -> Int? {
        state.withLock { $0.cancelled ? nil : $0.plan.next(key) }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func opened(_ channel: any Channel) -> Bool {
        state.withLock {
            guard !$0.cancelled else { return false }
            $0.channels[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func closed(_ channel: any Channel) {
        _ = state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Stops the batch: nothing more is sent, open connections close (their items end as
    /// cancelled when they do), and the items still waiting end as cancelled now.
    func cancel() {
        let (waiting, open) = state.withLock { state -> ([Int], [any Channel]) in
            guard !state.cancelled else { return ([], []) }
            state.cancelled = true
            let waiting = state.plan.drain() + state.retrying
            state.retrying = []
            return (waiting, Array(state.channels.values))
        }
        for channel in open { channel.close(promise: nil) }
        for index in waiting { finish(index, .failed(cancellation(index))) }
    }

    func cancellation(_ index: Int) -> FerryError {
        FerryError(.cancelled, "the batch was cancelled", url: items[index].url)
    }

    /// Puts an item back at the front of its host's queue when its request has not been
    /// sent again before; false when it has (the caller then gives up on it).
    func requeueOnce(_ index: Int, _ key: HostKey) -> Bool {
        state.withLock { state in
            guard state.resends[index] == 0, !state.cancelled else { return false }
            state.resends[index] += 1
            state.plan.requeue(index, key)
            return true
        }
    }

    /// How long to wait before asking for the item again after `status`, or nil when the
    /// status is its answer: the rulebook's decision for a GET (not retryable, attempts used
    /// up, `Retry-After` too far away).
    func retryDelay(_ index: Int, status: Int, retryAfter field: String?) -> Duration? {
        let policy = settings.retryPolicy
        guard policy.retryableStatuses.contains(status) else { return nil }
        let outcome = AttemptOutcome.answered(status: status, retryAfter: RetryPolicy.parseRetryAfter(field))
        return state.withLock { state -> Duration? in
            let failures = Int(state.statusAttempts[index]) + 1
            guard let delay = policy.decide(outcome, for: RetryRequest(method: "GET"), failures: failures).delay else { return nil }
            state.statusAttempts[index] = Int32(clamping: failures)
            return delay
        }
    }

    /// Puts the item back in its host's queue after `delay`, opening a connection if none is left.
    func retry(_ index: Int, _ key: HostKey, after delay: Duration) {
        guard state.withLock({ $0.cancelled ? false : $0.retrying.insert(index).inserted }) else {
            return finish(index, .failed(cancellation(index)))
        }
        group.next().scheduleTask(in: TimeAmount(delay)) { [self] in
            changePlan { state in
                // Cancelled meanwhile: `cancel()` has ended the item already.
                if state.retrying.remove(index) != nil { state.plan.requeue(index, key) }
            }
        }
    }

    func finish(_ index: Int, _ outcome: BatchDownload.Outcome) {
        let last: Bool? = state.withLock { state in
            guard state.outcomes[index] == nil else { return nil }
            state.outcomes[index] = outcome
            state.remaining -= 1
            return state.remaining == 0
        }
        guard let last else { return }
        onOutcome(index, outcome)
        if last { finished.succeed(()) }
    }

    /// The request head for an item: the path and query as written, `Host` unless given.
    func requestHead(_ index: Int, _ key: HostKey) -> HTTPRequestHead {
        let url = items[index].url
        let path = url.path(percentEncoded: true)
        var target = path.isEmpty ? "/" : path
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        var headers = HTTPHeaders()
        if !encodedHeaders.contains(name: "Host") {
            let host = key.host.utf8.contains(UInt8(ascii: ":")) ? "[\(key.host)]" : key.host
            headers.add(name: "Host", value: key.port == key.defaultPort ? host : "\(host):\(key.port)")
        }
        headers.add(contentsOf: encodedHeaders)
        return HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers)
    }

    /// Opens a connection that the plan already counts for `key`.
    private func connect(_ key: HostKey) {
        let batch = self
        let context: NIOSSLContext?
        switch (key.secure, tls) {
        case (false, _): context = nil
        case (true, .success(let made)?): context = made
        case (true, .failure(let error)?): return connectionFailed(key, error)
        case (true, nil): return connectionFailed(key, FerryError(.secureConnectionFailed, "no TLS context"))
        }
        // An address written as digits needs no resolver (which runs on a thread of its own),
        // and NIOSSL checks it against the certificate's IP entries; a name, against its names.
        let numeric = try? SocketAddress(ipAddress: key.host, port: key.port)
        let serverHostname = numeric == nil ? key.host : nil
        let bootstrap = ClientBootstrap(group: group)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(TimeAmount(settings.idleTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: context, serverHostname: serverHostname))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(BatchConnection(batch: batch, key: key))
                }
            }
        let connecting = numeric.map { bootstrap.connect(to: $0) } ?? bootstrap.connect(host: key.host, port: key.port)
        connecting.whenComplete { result in
            switch result {
            case .success:
                batch.state.withLock { $0.plan.connected(key) }
            case .failure(let error):
                batch.connectionFailed(key, error)
            }
        }
    }

    /// A connection ended (told by its handler once its request is settled or requeued):
    /// its place goes to this host or the next one with items waiting.
    func connectionEnded(_ key: HostKey) {
        changePlan { $0.plan.ended(key) }
    }

    /// A connection could not be made: another host may take its place; the host's waiting
    /// items go back to the caller when no connection to it is left to drain them.
    private func connectionFailed(_ key: HostKey, _ error: any Error) {
        settings.logger.debug("batch connection failed", metadata: ["host": "\(key.host):\(key.port)", "error": "\(error)"])
        let givenUp = changePlan { $0.plan.failed(key) }
        for index in givenUp {
            finish(index, .handedBack(FerryError.from(error, url: items[index].url).message))
        }
    }
}
