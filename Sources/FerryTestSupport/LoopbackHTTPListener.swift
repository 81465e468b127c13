// The listening half the project's HTTP/1.1 test servers share.
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// HTTP/1.1 on `127.0.0.1`: each accepted connection is handed to the server's `serve` with
/// its 1-based number; open connections are counted and tracked, and `shutdown()` closes the
/// listener and every connection, then waits for the handlers to end.
///
/// ```swift
/// let listener = try await LoopbackHTTPListener.bind()
/// listener.startAccepting { connection, number in try await server.serve(connection, number: number) }
/// ```
final class LoopbackHTTPListener: Sendable {
    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    struct Counts {
        var current = 0
        var total = 0
        var maxConcurrent = 0
    }

    let port: Int
    private let serverChannel: NIOAsyncChannel<Connection, Never>
    private let state = Mutex<(counts: Counts, channels: [ObjectIdentifier: any Channel])>((Counts(), [:]))
    private let acceptTask: Mutex<Task<Void, Never>?> = Mutex(nil)
    /// Set as `shutdown()` begins; read by the accept loop and by each new connection's set-up.
    private let shuttingDown: ShutdownFlag

    /// Shared with the bootstrap's child initializer, which exists before the listener does.
    final class ShutdownFlag: Sendable {
        private let flag = Mutex(false)
        var isSet: Bool { flag.withLock { $0 } }
        func set() { flag.withLock { $0 = true } }
    }

    private init(serverChannel: NIOAsyncChannel<Connection, Never>, port: Int, shuttingDown: ShutdownFlag) {
        self.serverChannel = serverChannel
        self.port = port
        self.shuttingDown = shuttingDown
    }

    /// Listens (`port` 0: the system chooses); nothing is accepted before `startAccepting`.
    ///
    /// `pipeliningAssistance: false` leaves out NIO's `HTTPServerPipelineHandler`: for a server
    /// that answers some requests before their body has arrived (a refused or cut append) and
    /// keeps reading, which that handler's debug checks take for a second response.
    static func bind(port: Int = 0, pipeliningAssistance: Bool = true) async throws -> LoopbackHTTPListener {
        let shuttingDown = ShutdownFlag()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: "127.0.0.1", port: port) { child in
                child.eventLoop.makeCompletedFuture {
                    // A connection that arrives as the listener closes is refused before it is
                    // wrapped: wrapped, it could reach the closed stream of connections, be
                    // dropped there untaken, and trap in NIO (a test that cancelled hundreds of
                    // requests left connects in flight at its server's shutdown).
                    if shuttingDown.isSet { throw ChannelError.ioOnClosedChannel }
                    try child.pipeline.syncOperations.configureHTTPServerPipeline(
                        withPipeliningAssistance: pipeliningAssistance, withErrorHandling: true)
                    return try Connection(wrappingChannelSynchronously: child)
                }
            }
        guard let bound = channel.channel.localAddress?.port else {
            throw TestServerError("the listening socket has no port")
        }
        return LoopbackHTTPListener(serverChannel: channel, port: bound, shuttingDown: shuttingDown)
    }

    /// Serves each connection in a task of its own; a handler that throws closes its connection.
    func startAccepting(_ serve: @escaping @Sendable (Connection, Int) async throws -> Void) {
        let task = Task { await self.acceptLoop(serve) }
        acceptTask.withLock { $0 = task }
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// Starts counting anew; connections open now still count as current (and as the maximum).
    func resetCounts() {
        state.withLock {
            $0.counts.total = 0
            $0.counts.maxConcurrent = $0.counts.current
        }
    }

    /// Stops listening, closes every open connection and waits for their handlers to end.
    ///
    /// The accept loop is not cancelled: it ends when the closed listener's stream of
    /// connections does, so a connection accepted just before the close is still taken (and
    /// closed). Dropped untaken, its NIOAsyncChannel trapped in NIO ("Deinited NIOAsyncWriter
    /// without calling finish()") and took the whole test process down (CI, 2026-11-25).
    func shutdown() async {
        shuttingDown.set()
        try? await serverChannel.channel.close()
        let open = state.withLock { Array($0.channels.values) }
        for channel in open { channel.close(promise: nil) }
        let task = acceptTask.withLock { t -> Task<Void, Never>? in defer { t = nil }; return t }
        guard let task else { return }
        // Bounded: a loop that has not ended within 10 s is cancelled.
        let ended = Mutex(false)
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(10))
            if !ended.withLock({ $0 }) { task.cancel() }
        }
        await task.value
        ended.withLock { $0 = true }
        watchdog.cancel()
    }

    private func acceptLoop(_ serve: @escaping @Sendable (Connection, Int) async throws -> Void) async {
        do {
            try await serverChannel.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in inbound {
                        if shuttingDown.isSet {
                            // Arrived during shutdown: finished properly, never served.
                            try? await connection.executeThenClose { _, _ in }
                            continue
                        }
                        let number = self.opened(connection.channel)
                        group.addTask {
                            do {
                                try await serve(connection, number)
                            } catch {
                                connection.channel.close(promise: nil)
                            }
                            self.closed(connection.channel)
                        }
                    }
                }
            }
        } catch {
            // The listener was closed or the task cancelled: nothing more to accept.
        }
    }

    private func opened(_ channel: any Channel) -> Int {
        state.withLock {
            $0.counts.current += 1
            $0.counts.total += 1
            $0.counts.maxConcurrent = max($0.counts.maxConcurrent, $0.counts.current)
            $0.channels[ObjectIdentifier(channel)] = channel
            return $0.counts.total
        }
    }

    private func closed(_ channel: any Channel) {
        state.withLock {
            if $0.channels.removeValue(forKey: ObjectIdentifier(channel)) != nil { $0.counts.current -= 1 }
        }
    }
}
