import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The name lookup of one new plain connection, timed for its metrics (URLSession's
/// `domainLookupStartDate` and `domainLookupEndDate`). NIO's own resolver makes the same
/// `getaddrinfo` call off the event loop but keeps no times; this one is handed to the
/// connection's `ClientBootstrap` and Happy Eyeballs works from its answers as from NIO's.
///
/// A host that is an address already (`127.0.0.1`, `::1`) is not looked up: it is answered at
/// once, without the hop to another thread, and the connection has no lookup dates, as on the
/// platform.
///
/// ```swift
/// let lookup = TimedNameLookup(loop: loop)
/// let channel = try await ClientBootstrap(group: loop).resolver(lookup).connect(host: "example.com", port: 80).get()
/// lookup.interval  // (start, end) of getaddrinfo, or nil for an address
/// ```
final class TimedNameLookup: Resolver, Sendable {
    private let loop: any EventLoop
    private let v4: EventLoopPromise<[SocketAddress]>
    private let v6: EventLoopPromise<[SocketAddress]>
    private enum State {
        case notAsked
        case answeredWithoutLookup
        case lookingUp(since: Date)
        case lookedUp(since: Date, until: Date)
        /// The connect gave up before the lookup ran (Happy Eyeballs' `cancelQueries`).
        case cancelled
    }
    private let state = NIOLockedValueBox(State.notAsked)

    init(loop: any EventLoop) {
        self.loop = loop
        self.v4 = loop.makePromise()
        self.v6 = loop.makePromise()
    }

    /// When the lookup began and ended; nil when the host needed none (or it has not ended).
    var interval: (start: Date, end: Date)? {
        guard case .lookedUp(let start, let end) = state.withLockedValue({ $0 }) else { return nil }
        return (start, end)
    }

    // Happy Eyeballs asks for both kinds of address, AAAA first; one lookup answers both.
    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        begin(host: host, port: port)
        return v6.futureResult
    }

    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        begin(host: host, port: port)
        return v4.futureResult
    }

    func cancelQueries() {
        state.withLockedValue { state in
            if case .lookingUp = state { state = .cancelled }
        }
    }

    private func begin(host: String, port: Int) {
        let address = try? SocketAddress(ipAddress: host, port: port)
        guard state.withLockedValue({ state in
            guard case .notAsked = state else { return false }  // the other query began it
            state = address == nil ? .lookingUp(since: Date()) : .answeredWithoutLookup
            return true
        }) else { return }
        if let address { return publish(address.protocol == .inet6 ? ([], [address]) : ([address], [])) }
        // getaddrinfo blocks: never on the event loop, nor on NIO's pool for blocking work
        // (ferryd moves files there, and a slow name server would hold those moves up).
        Self.queue(for: loop).async { self.lookUp(host: host, port: port) }
    }

    /// One serial queue per event loop, as NIO's own resolver keeps: a loop's lookups run one
    /// after another, beside other loops'.
    private static let queues = NIOLockedValueBox<[ObjectIdentifier: DispatchQueue]>([:])

    private static func queue(for loop: any EventLoop) -> DispatchQueue {
        queues.withLockedValue { queues in
            if let queue = queues[ObjectIdentifier(loop)] { return queue }
            // Bounded: the engine's loops are those of one group, made once.
            if queues.count >= 64 { queues.removeAll() }
            let queue = DispatchQueue(label: "ferry.name-lookup")
            queues[ObjectIdentifier(loop)] = queue
            return queue
        }
    }

    private func lookUp(host: String, port: Int) {
        let wanted = state.withLockedValue { state in
            if case .cancelled = state { return false }
            return true
        }
        guard wanted else {
            fail(CancellationError())  // nobody waits for it: no lookup made
            return
        }
        var hints = addrinfo()
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_protocol = NIOBSDSocket.OptionLevel.tcp.rawValue
        var found: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, String(port), &hints, &found)
        ended()
        guard code == 0, let first = found else {
            fail(NameNotFound(host: host, reason: code == 0 ? "no address" : String(cString: gai_strerror(code))))
            return
        }
        defer { freeaddrinfo(first) }
        var v4: [SocketAddress] = [], v6: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            if let address = info.pointee.ai_addr {
                switch info.pointee.ai_family {
                case AF_INET: v4.append(SocketAddress(UnsafeRawPointer(address).load(as: sockaddr_in.self), host: host))
                case AF_INET6: v6.append(SocketAddress(UnsafeRawPointer(address).load(as: sockaddr_in6.self), host: host))
                default: break
                }
            }
            entry = info.pointee.ai_next
        }
        publish((v4, v6))
    }

    private func ended() {
        state.withLockedValue { state in
            if case .lookingUp(let since) = state { state = .lookedUp(since: since, until: max(since, Date())) }
        }
    }

    /// Both answers in one turn of the loop, as NIO's resolver gives them.
    private func publish(_ addresses: (v4: [SocketAddress], v6: [SocketAddress])) {
        loop.execute { [v4, v6] in
            v6.succeed(addresses.v6)
            v4.succeed(addresses.v4)
        }
    }

    private func fail(_ error: any Error) {
        loop.execute { [v4, v6] in
            v6.fail(error)
            v4.fail(error)
        }
    }
}

/// A host name `getaddrinfo` found no address for (NIO's own error of this kind cannot be made
/// outside NIO); the engine tells it as `cannotFindHost`.
struct NameNotFound: Error, CustomStringConvertible {
    var host: String
    var reason: String
    var description: String { "cannot look up \(host): \(reason)" }
}
