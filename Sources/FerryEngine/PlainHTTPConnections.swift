import FerryCore
import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// Kept-alive HTTP/1.1 connections for the engine's plain requests: `http` without a proxy,
/// without credentials in the URL and without a request body (GET, HEAD, DELETE…), which is
/// most of what a session downloads.
///
/// Why not AsyncHTTPClient for these: for a 16 KiB file its per-request machinery (request
/// bag, pool and body state machines, a body producer) cost about twice curl's CPU, and a
/// session on two cores could not keep up with curl above it. Here a request is one hop onto
/// its connection's event loop and one back: the response head is handed over when the read
/// that carried it is complete, with whatever body that read held already buffered, so a
/// small answer is read to its end without waiting again (``PlainExchange``). Everything else
/// (TLS, HTTP/2, proxies, uploads) still goes through AsyncHTTPClient, and plain `http` never
/// spoke anything but HTTP/1.1 there. To the engine both answer with an `HTTPClientResponse`.
///
/// The engine's ``HostLimiter`` bounds the requests in flight per host, so this pool does not
/// bound connections itself; it keeps at most that many idle per origin, and closes one that
/// stayed idle for `connectionIdleTimeout`.
final class PlainHTTPConnections: Sendable {
    struct Origin: Hashable {
        var host: String
        var port: Int
    }

    private struct State {
        var idle: [Origin: [PlainConnection]] = [:]
        /// Every open connection, idle or in use, to close them all at shutdown.
        var open: [ObjectIdentifier: PlainConnection] = [:]
        var closed = false

        /// The idle connection to `origin` released last, if any.
        mutating func takeIdle(to origin: Origin) -> PlainConnection? {
            defer { dropIfEmpty(origin) }
            return idle[origin]?.popLast()
        }

        /// Takes the first idle connection to `origin` that `matches` out of the list.
        mutating func withdrawIdle(from origin: Origin, where matches: (PlainConnection) -> Bool) -> Bool {
            guard let index = idle[origin]?.firstIndex(where: matches) else { return false }
            idle[origin]?.remove(at: index)
            dropIfEmpty(origin)
            return true
        }

        /// An origin without idle connections has no entry: hosts come and go over the
        /// engine's life (ferryd's runs for weeks).
        private mutating func dropIfEmpty(_ origin: Origin) {
            if idle[origin]?.isEmpty == true { idle[origin] = nil }
        }
    }

    private let state = NIOLockedValueBox(State())
    private let idleLimit: Int
    private let idleTimeout: TimeAmount
    private let connectTimeout: TimeAmount
    private let group: any EventLoopGroup

    init(configuration: EngineConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.idleLimit = max(1, configuration.maximumConnectionsPerHost)
        self.idleTimeout = .milliseconds(Int64(configuration.connectionIdleTimeout * 1000))
        // As AsyncHTTPClient's connect time-out was set: the idle time-out, at most a minute.
        self.connectTimeout = .seconds(Int64(min(configuration.idleTimeout, 60).rounded(.up)))
        self.group = group
    }

    /// Sends `request` and returns its response once the head has arrived; the body streams
    /// from the connection as it is read. Reading the body to its end gives the connection
    /// back for the next request; dropping the response before that closes it.
    func execute(_ request: PlainRequest) async throws -> (HTTPClientResponse, ConnectionUse) {
        let (connection, reused) = try await connection(to: request.origin)
        let exchange = PlainExchange(connection: connection)
        let head = try await exchange.send(request.head)
        let response = HTTPClientResponse(version: head.version, status: head.status, headers: head.headers,
                                          body: .stream(PlainResponseBody(exchange: exchange)))
        return (response, connection.use(reused: reused))
    }

    /// An idle connection to `origin` (the one released last), without waiting: nil when there is
    /// none (``LoopTransfer`` then leaves the transfer to a Swift task, which opens one).
    func idleConnection(to origin: Origin) -> PlainConnection? {
        while let idle = state.withLockedValue({ $0.takeIdle(to: origin) }) {
            if idle.channel.isActive { return idle }
        }
        return nil
    }

    /// An idle connection to `origin` (the one released last), or a new one; whether it was idle.
    private func connection(to origin: Origin) async throws -> (PlainConnection, reused: Bool) {
        if let idle = idleConnection(to: origin) { return (idle, true) }
        if state.withLockedValue({ $0.closed }) { throw HTTPClientError.alreadyShutdown }
        let handlerSettings = PlainConnectionHandler.Settings(idleTimeout: idleTimeout) { [weak self] channel in
            self?.withdrawIdle(channel, from: origin) ?? true
        }
        let opening = Date()
        let loop = group.next()
        let lookup = TimedNameLookup(loop: loop)
        let (channel, handler) = try await open(origin, on: loop, lookup: lookup, settings: handlerSettings)
        let connected = Date()
        // The platform's steps: the name's lookup (none for an address), then the connect.
        // Clamped: the wall clock may step between the readings.
        let looked = lookup.interval.map { (start: min($0.start, connected), end: min($0.end, connected)) }
        let times = ConnectionTimes(
            domainLookupStart: looked?.start, domainLookupEnd: looked?.end,
            connectStart: looked?.end ?? min(opening, connected), connectEnd: max(opening, connected))
        let connection = PlainConnection(channel: channel, handler: handler, origin: origin, pool: self, times: times)
        let shutDown = state.withLockedValue { state in
            state.open[ObjectIdentifier(connection)] = connection
            return state.closed
        }
        channel.closeFuture.whenComplete { [weak self] _ in self?.forget(connection) }
        if shutDown { channel.close(promise: nil) }
        return (connection, false)
    }

    /// Opens a connection to `origin`. Cancelling the calling task gives up at once, as
    /// AsyncHTTPClient did for a request waiting for its connection (NIO's connect runs to its
    /// own time-out otherwise); a connection that opens after that is closed.
    private func open(_ origin: Origin, on loop: any EventLoop, lookup: TimedNameLookup, settings: PlainConnectionHandler.Settings) async throws
        -> (any Channel, NIOLoopBound<PlainConnectionHandler>)
    {
        let made = NIOLockedValueBox<NIOLoopBound<PlainConnectionHandler>?>(nil)
        let connecting = ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .resolver(lookup)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = PlainConnectionHandler(settings: settings)
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(handler)
                    made.withLockedValue { $0 = NIOLoopBound(handler, eventLoop: channel.eventLoop) }
                }
            }
            .connect(host: origin.host, port: origin.port)
        let waiter = ConnectWaiter()
        let channel = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiter.wait(continuation)
                connecting.whenComplete { result in
                    if !waiter.finish(with: result), case .success(let channel) = result { channel.close(promise: nil) }
                }
            }
        } onCancel: {
            _ = waiter.finish(with: .failure(CancellationError()))
        }
        guard let handler = made.withLockedValue({ $0 }) else { throw ChannelError.ioOnClosedChannel }
        return (channel, handler)
    }

    /// Takes back a connection whose response was read to its end and may be used again.
    func release(_ connection: PlainConnection) {
        let kept = state.withLockedValue { state -> Bool in
            guard !state.closed, connection.channel.isActive, state.idle[connection.origin, default: []].count < idleLimit else { return false }
            state.idle[connection.origin, default: []].append(connection)
            return true
        }
        if !kept { connection.channel.close(promise: nil) }
    }

    /// Takes the connection over `channel` out of the idle list, to close it; false when it is
    /// not there (a request has it).
    private func withdrawIdle(_ channel: ObjectIdentifier, from origin: Origin) -> Bool {
        state.withLockedValue { state in
            state.withdrawIdle(from: origin) { ObjectIdentifier($0.channel) == channel }
        }
    }

    private func forget(_ connection: PlainConnection) {
        state.withLockedValue { state in
            _ = state.withdrawIdle(from: connection.origin) { $0 === connection }
            state.open[ObjectIdentifier(connection)] = nil
        }
    }

    /// How many hosts have idle connections now.
    var idleOrigins: Int { state.withLockedValue { $0.idle.count } }

    /// Closes every connection: the transfers still running on one fail, as AsyncHTTPClient's do.
    func shutdown() async {
        for connection in closeAll() { try? await connection.channel.close() }
    }

    /// As ``shutdown()`` without waiting (an engine dropped without shutting down).
    func shutdownNow() {
        for connection in closeAll() { connection.channel.close(promise: nil) }
    }

    private func closeAll() -> [PlainConnection] {
        state.withLockedValue { state in
            state.closed = true
            state.idle = [:]
            return Array(state.open.values)
        }
    }
}

/// Where a connect's outcome goes: to the waiting task, unless cancellation answered it
/// first. One answer only, whichever comes first.
private final class ConnectWaiter: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<any Channel, any Error>)
        case answered
    }

    private let state = NIOLockedValueBox(State.idle)

    func wait(_ continuation: CheckedContinuation<any Channel, any Error>) {
        let answeredAlready = state.withLockedValue { state -> Bool in
            guard case .idle = state else { return true }
            state = .waiting(continuation)
            return false
        }
        if answeredAlready { continuation.resume(throwing: CancellationError()) }
    }

    /// Answers the waiter with `result`; false when it did not get it (it had an answer already,
    /// or was not waiting yet: then it gets cancellation's answer when it comes).
    func finish(with result: Result<any Channel, any Error>) -> Bool {
        let waiting = state.withLockedValue { state -> CheckedContinuation<any Channel, any Error>? in
            defer { state = .answered }
            guard case .waiting(let continuation) = state else { return nil }
            return continuation
        }
        waiting?.resume(with: result)
        return waiting != nil
    }
}

/// One connection of ``PlainHTTPConnections``: its channel and the handler that runs its
/// exchanges, one at a time.
final class PlainConnection: Sendable {
    let channel: any Channel
    let origin: PlainHTTPConnections.Origin
    private let handler: NIOLoopBound<PlainConnectionHandler>
    private let pool: PlainHTTPConnections
    /// How it was opened: told in the metrics of its first request only.
    private let times: ConnectionTimes

    init(channel: any Channel, handler: NIOLoopBound<PlainConnectionHandler>, origin: PlainHTTPConnections.Origin,
         pool: PlainHTTPConnections, times: ConnectionTimes) {
        self.channel = channel
        self.handler = handler
        self.origin = origin
        self.pool = pool
        self.times = times
    }

    /// What a request's metrics say of this connection.
    func use(reused: Bool) -> ConnectionUse {
        ConnectionUse(
            isReused: reused, times: reused ? nil : times,
            localAddress: channel.localAddress?.ipAddress, localPort: channel.localAddress?.port,
            remoteAddress: channel.remoteAddress?.ipAddress, remotePort: channel.remoteAddress?.port)
    }

    /// Runs `body` with the connection's handler, on its event loop.
    func onLoop(_ body: @escaping @Sendable (PlainConnectionHandler) -> Void) {
        let handler = handler
        channel.eventLoop.execute { body(handler.value) }
    }

    func release() { pool.release(self) }
}

/// A request the plain connections can carry (see ``PlainHTTPConnections``): its origin and
/// its head, with `Host` set from the URL's text.
struct PlainRequest {
    var origin: PlainHTTPConnections.Origin
    var head: HTTPRequestHead

    /// nil when the request needs AsyncHTTPClient: another scheme, a body, a proxy, a method
    /// that frames an empty body (POST, PUT, PATCH: `Content-Length: 0` there), credentials or
    /// percent-encoding in the URL's authority (AsyncHTTPClient's rules for those are kept by
    /// sending it there).
    init?(_ outgoing: HTTPClientRequest, proxied: Bool) {
        guard !proxied, case .none = outgoing.body else { return nil }
        switch outgoing.method {
        case .POST, .PUT, .PATCH: return nil
        default: break
        }
        // Read as bytes: the delimiters are ASCII, and Character-wise reads (or Foundation's
        // `contains` on strings) cost more than the rest of sending a small request.
        let text = outgoing.url
        let bytes = text.utf8
        guard Self.hasHTTPScheme(bytes) else { return nil }
        let rest = bytes.index(bytes.startIndex, offsetBy: 7)
        let authorityEnd = bytes[rest...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        let authority = text[rest..<authorityEnd]
        guard !authority.isEmpty, !authority.utf8.contains(UInt8(ascii: "@")), !authority.utf8.contains(UInt8(ascii: "%")),
            let (host, port) = Self.hostAndPort(authority)
        else { return nil }
        let fragment = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        var target = String(text[authorityEnd..<fragment])
        if target.isEmpty || target.utf8.first == UInt8(ascii: "?") { target = "/" + target }
        var headers = outgoing.headers
        // No body goes with it: framing the caller wrote would leave the server waiting.
        headers.remove(name: "Content-Length")
        headers.remove(name: "Transfer-Encoding")
        if !headers.contains(name: "Host") { headers.add(name: "Host", value: String(authority)) }
        // Names differ only in case for the same host: one idle list.
        self.origin = .init(host: host.utf8.contains(where: { (65...90).contains($0) }) ? host.lowercased() : host, port: port)
        self.head = HTTPRequestHead(version: .http1_1, method: outgoing.method, uri: target, headers: headers)
    }

    /// Starts with `http://`, in any letter case, and has more after it.
    private static func hasHTTPScheme(_ bytes: String.UTF8View) -> Bool {
        var index = bytes.startIndex
        for expected in "http://".utf8 {
            guard index != bytes.endIndex else { return false }
            let byte = bytes[index]
            guard (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == expected else { return false }
            bytes.formIndex(after: &index)
        }
        return index != bytes.endIndex
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`; the port defaults to 80.
    private static func hostAndPort(_ authority: Substring) -> (String, Int)? {
        var host = authority
        var portText: Substring = ""
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !host.isEmpty else { return nil }
        if portText.isEmpty { return (String(host), 80) }
        guard let port = Int(portText), (1...65535).contains(port) else { return nil }
        return (String(host), port)
    }
}
