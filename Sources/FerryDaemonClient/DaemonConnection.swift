public import FerryProtocol
import Foundation
public import Logging
import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix

/// One connection to ferryd over the user's Unix socket: the handshake, requests matched to
/// their replies, and the messages ferryd pushes (events, progress, `eventsFinished`, `goodbye`).
///
/// ```swift
/// let connection = try await DaemonConnection.open(DaemonEndpoint(), clientName: "ferry-cli")
/// let reply = try await connection.send(.listSessions)
/// for await message in connection.pushedMessages { print(message.typeName) }
/// ```
///
/// Requests may be sent from any thread; `sendAndWait` blocks the calling thread (never an
/// event-loop thread), which is what `resume()` of a background task needs to be durable
/// before it returns.
public final class DaemonConnection: Sendable {
    /// The version and daemon that answered the handshake.
    public let welcome: Welcome
    /// Everything ferryd sends that is not a reply, in the order it arrived. Finishes when the
    /// connection closes.
    public let pushedMessages: AsyncStream<DaemonMessage>
    private let channel: any Channel
    private let state: ConnectionState
    private let logger: Logger

    private init(welcome: Welcome, channel: any Channel, state: ConnectionState, logger: Logger) {
        self.welcome = welcome
        self.channel = channel
        self.state = state
        self.pushedMessages = state.pushed
        self.logger = logger
    }

    /// Connects to ferryd at `endpoint`, starting it first when nobody answers and
    /// `endpoint.startsDaemon` allows, then says hello.
    public static func open(
        _ endpoint: DaemonEndpoint, clientName: String, logger: Logger = Logger(label: "ferry.daemon-client")
    ) async throws(DaemonConnectionError) -> DaemonConnection {
        // The waiting (and a possible start of ferryd) happens on a thread of its own, never
        // on the cooperative pool, which a blocked wait could exhaust.
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<DaemonConnection, DaemonConnectionError>, Never>) in
            Thread.detachNewThread {
                do throws(DaemonConnectionError) {
                    continuation.resume(returning: .success(try openAndWait(endpoint, clientName: clientName, logger: logger)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// `open` for synchronous callers (a background `Session`'s initializer): blocks this
    /// thread on SwiftNIO's event loop, never on Swift's cooperative pool.
    public static func openAndWait(
        _ endpoint: DaemonEndpoint, clientName: String, logger: Logger = Logger(label: "ferry.daemon-client")
    ) throws(DaemonConnectionError) -> DaemonConnection {
        do {
            return try handshakeWhenFree(endpoint, clientName: clientName, logger: logger)
        } catch .unreachable(let first) where endpoint.startsDaemon {
            logger.info("ferryd is not running; starting it", metadata: ["socket": "\(endpoint.socketPath)"])
            try DaemonStarter(endpoint: endpoint, logger: logger).start()
            // It binds its socket within milliseconds; a slow machine gets a few seconds.
            var delay: UInt32 = 10_000
            let deadline = ContinuousClock.now + endpoint.startTimeout
            var lastError = first
            while ContinuousClock.now < deadline {
                usleep(delay)
                delay = min(delay * 2, 200_000)
                do {
                    return try handshakeWhenFree(endpoint, clientName: clientName, logger: logger)
                } catch .unreachable(let reason) {
                    lastError = reason
                }
            }
            throw .cannotStartDaemon("ferryd did not answer on \(endpoint.socketPath) within \(endpoint.startTimeout) (\(lastError)); see \(endpoint.daemonLogPath)")
        }
    }

    /// The handshake, tried again with backoff (10 ms doubling to 500 ms) while ferryd is
    /// busy: its listen backlog is full or it holds as many connections as it allows. Busy
    /// past `endpoint.busyTimeout` is thrown as ``DaemonConnectionError/busy(_:)``.
    private static func handshakeWhenFree(
        _ endpoint: DaemonEndpoint, clientName: String, logger: Logger
    ) throws(DaemonConnectionError) -> DaemonConnection {
        var delay: UInt32 = 10_000
        let deadline = ContinuousClock.now + endpoint.busyTimeout
        while true {
            do {
                return try wait(handshake(endpoint, clientName: clientName, logger: logger))
            } catch .busy(let why) {
                guard ContinuousClock.now < deadline else { throw .busy("\(why) (for \(endpoint.busyTimeout))") }
                logger.debug("ferryd is busy; trying again", metadata: ["why": "\(why)", "delay-ms": "\(delay / 1000)"])
                usleep(delay)
                delay = min(delay * 2, 500_000)
            }
        }
    }

    /// Blocks until `future` completes; its errors are `DaemonConnectionError`s.
    private static func wait<T: Sendable>(_ future: EventLoopFuture<T>) throws(DaemonConnectionError) -> T {
        let box = NIOLockedValueBox<Result<T, DaemonConnectionError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        future.whenComplete { result in
            box.withLockedValue { $0 = result.mapError { ($0 as? DaemonConnectionError) ?? .connectionLost("\($0)") } }
            done.signal()
        }
        done.wait()
        return try box.withLockedValue { $0! }.get()
    }

    /// Connects and says hello; a ferryd that accepts but does not answer within 5 s is
    /// given up on.
    private static func handshake(_ endpoint: DaemonEndpoint, clientName: String, logger: Logger) -> EventLoopFuture<DaemonConnection> {
        let state = ConnectionState()
        let group = MultiThreadedEventLoopGroup.singleton
        return ClientBootstrap(group: group)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(FrameDecoder()),
                        MessageToByteHandler(FrameEncoder()),
                        DaemonMessageHandler(state: state),
                    ])
                }
            }
            .connect(unixDomainSocketPath: endpoint.socketPath)
            .flatMapErrorThrowing { error in
                // A Unix socket whose listen backlog is full refuses with EAGAIN: ferryd is
                // there, only busy.
                if let error = error as? IOError, error.errnoCode == EAGAIN {
                    throw DaemonConnectionError.busy("its listen backlog is full")
                }
                throw DaemonConnectionError.unreachable("\(error)")
            }
            .flatMap { channel -> EventLoopFuture<DaemonConnection> in
                let answer = state.expectHandshake(on: channel.eventLoop)
                let timer = channel.eventLoop.scheduleTask(in: .seconds(5)) {
                    state.closed(reason: "ferryd accepted the connection but did not answer the hello within 5 s")
                    channel.close(promise: nil)
                }
                let hello = ClientMessage.hello(Hello(
                    minimumProtocolVersion: ProtocolVersion.supported.lowerBound, clientName: clientName, pid: getpid(), handlesEventsForOtherSessions: endpoint.handlesEventsForOtherSessions ? true : nil,
                    answersChallenges: endpoint.answersChallenges ? true : nil))
                return channel.eventLoop.makeCompletedFuture { try MessageCoder().encode(hello) }
                    .flatMap { channel.writeAndFlush($0) }
                    .flatMap { answer }
                    .flatMapThrowing { message -> DaemonConnection in
                        timer.cancel()
                        let welcome = try ProtocolVersion.accept(message)
                        logger.debug("connected to ferryd", metadata: ["daemonVersion": "\(welcome.daemonVersion)"])
                        return DaemonConnection(welcome: welcome, channel: channel, state: state, logger: logger)
                    }
                    .flatMapErrorThrowing { error in
                        timer.cancel()
                        channel.close(promise: nil)
                        switch error {
                        case let error as DaemonConnectionError: throw error
                        case let error as FerryProtocolError where error.code == .busy: throw DaemonConnectionError.busy(error.message)
                        case let error as FerryProtocolError: throw DaemonConnectionError.refused(error)
                        default: throw DaemonConnectionError.connectionLost("during the handshake: \(error)")
                        }
                    }
            }
    }

    /// Sends a request and waits for its reply. A `failure` from ferryd is thrown as
    /// ``DaemonConnectionError/failure(_:)``.
    public func send(_ request: Request) async throws(DaemonConnectionError) -> Reply {
        do {
            return try await enqueue(request).get()
        } catch let error as DaemonConnectionError {
            throw error
        } catch {
            throw .connectionLost("\(error)")
        }
    }

    /// Sends a request and returns at once: `answered` gets its reply, or its failure, later.
    /// Requests leave and are answered in the order they were sent, so a later one that is
    /// waited for is answered after this one.
    public func post(_ request: Request, answered: @escaping @Sendable (Result<Reply, any Error>) -> Void) {
        enqueue(request).whenComplete(answered)
    }

    /// Sends a request and blocks this thread until the reply (or `timeout`).
    public func sendAndWait(_ request: Request, timeout: TimeAmount = .seconds(30)) throws(DaemonConnectionError) -> Reply {
        let future = enqueue(request)
        let timer = channel.eventLoop.scheduleTask(in: timeout) {
            self.state.fail(future: future, with: .timedOut("ferryd did not answer \(request.typeName) within \(timeout.nanoseconds / 1_000_000_000) s"))
        }
        defer { timer.cancel() }
        let box = NIOLockedValueBox<Result<Reply, DaemonConnectionError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        future.whenComplete { result in
            box.withLockedValue { value in
                value = result.mapError { ($0 as? DaemonConnectionError) ?? .connectionLost("\($0)") }
            }
            done.signal()
        }
        done.wait()
        return try box.withLockedValue { $0! }.get()
    }

    private func enqueue(_ request: Request) -> EventLoopFuture<Reply> {
        let (id, promise) = state.register(on: channel.eventLoop)
        do {
            let payload = try MessageCoder().encode(ClientMessage.request(id: id, request))
            channel.writeAndFlush(payload).whenFailure { [state] error in
                state.complete(id: id, with: .failure(DaemonConnectionError.connectionLost("cannot send: \(error)")))
            }
        } catch {
            state.complete(id: id, with: .failure(DaemonConnectionError.refused(error)))
        }
        return promise.futureResult
    }

    /// Whether the socket is still open.
    public var isConnected: Bool { channel.isActive }

    /// How many events and progress reports ferryd has pushed on this connection (taken or
    /// not): what a paced session's window bounds.
    package var eventsAndProgressReceived: Int { state.eventsAndProgressReceived.load(ordering: .relaxed) }
    /// The body bytes of the data events among them.
    package var bodyBytesReceived: Int { state.bodyBytesReceived.load(ordering: .relaxed) }

    /// Closes the connection; ferryd treats it as the process going away.
    public func close() async {
        try? await channel.close()
    }

    /// `close` for synchronous callers.
    public func closeNow() {
        channel.close(promise: nil)
    }
}

/// Why talking to ferryd failed.
public enum DaemonConnectionError: Error, Sendable, CustomStringConvertible {
    /// Nothing listens on the socket (and ferryd was not to be started).
    case unreachable(String)
    /// ferryd could not be found or started, or did not come up in time.
    case cannotStartDaemon(String)
    /// ferryd is running but takes no more connections for now (full backlog, connection
    /// limit), even after trying again for `DaemonEndpoint.busyTimeout`.
    case busy(String)
    /// ferryd refused the handshake (e.g. `unsupportedVersion`) or sent something unreadable.
    case refused(FerryProtocolError)
    /// ferryd answered a request with an error (`backgroundSessionInUseByAnotherProcess`, …).
    case failure(FerryProtocolError)
    /// The connection closed before the answer came.
    case connectionLost(String)
    /// No answer in time.
    case timedOut(String)

    public var description: String {
        switch self {
        case .unreachable(let why): "ferryd is not reachable: \(why)"
        case .cannotStartDaemon(let why): "cannot start ferryd: \(why)"
        case .busy(let why): "ferryd is busy: \(why)"
        case .refused(let error): "ferryd refused the connection: \(error.code.rawValue): \(error.message)"
        case .failure(let error): "\(error.code.rawValue): \(error.message)"
        case .connectionLost(let why): "the connection to ferryd was lost: \(why)"
        case .timedOut(let why): why
        }
    }

    /// The protocol error code, when ferryd sent one.
    public var protocolCode: FerryProtocolError.Code? {
        switch self {
        case .refused(let error), .failure(let error): error.code
        default: nil
        }
    }
}
