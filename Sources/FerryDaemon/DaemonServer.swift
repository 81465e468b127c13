#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import FerryApps
import FerryProtocol
public import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// ferryd's listening socket: where it is, who may use it, and the pipeline each client gets.
///
/// The runtime folder is made `0700` and the socket `0600` (the umask is `077` while
/// binding), so only the user reaches it; each client's uid is checked again with
/// `SO_PEERCRED` and another user's connection is closed at once.
///
/// ```swift
/// let server = try await DaemonServer.bind(daemon: daemon, socketURL: socketURL)
/// try await server.closeFuture()
/// ```
public final class DaemonServer: Sendable {
    let channel: any Channel
    public let socketURL: URL?

    private init(channel: any Channel, socketURL: URL?) {
        self.channel = channel
        self.socketURL = socketURL
    }

    /// Binds `socketURL` (removing a stale socket file first: call this only while holding
    /// the ``InstanceLock``), or adopts the socket systemd passed (`LISTEN_FDS`).
    public static func bind(daemon: Daemon, socketURL: URL, systemdSocket: Int32? = nil) async throws -> DaemonServer {
        let bootstrap = Self.bootstrap(daemon: daemon)
        if let descriptor = systemdSocket {
            let channel = try await bootstrap.withBoundSocket(descriptor).get()
            daemon.logger.notice("listening on the socket systemd passed", metadata: ["fd": "\(descriptor)"])
            return DaemonServer(channel: channel, socketURL: nil)
        }
        let folder = socketURL.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try ensurePrivateFolder(folder)
        if FileManager.default.fileExists(atPath: socketURL.path) {
            try FileManager.default.removeItem(at: socketURL)  // stale: we hold the lock
        }
        let previous = umask(0o077)
        defer { umask(previous) }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(unixDomainSocketPath: socketURL.path).get()
        } catch {
            throw DaemonError("cannot listen on \(socketURL.path): \(error)")
        }
        chmod(socketURL.path, 0o600)
        daemon.logger.notice("listening", metadata: ["socket": "\(socketURL.path)", "pid": "\(getpid())"])
        return DaemonServer(channel: channel, socketURL: socketURL)
    }

    /// The folder must be ours and closed to others: a socket in a folder another user can
    /// write to could be swapped.
    static func ensurePrivateFolder(_ folder: URL) throws {
        var info = stat()
        guard stat(folder.path, &info) == 0 else {
            throw DaemonError("cannot read \(folder.path): \(String(cString: strerror(errno)))")
        }
        guard info.st_uid == getuid() else {
            throw DaemonError("\(folder.path) belongs to uid \(info.st_uid), not to this user: set FERRY_RUNTIME_DIR to a folder of yours")
        }
        if info.st_mode & 0o077 != 0 { chmod(folder.path, 0o700) }
    }

    /// The socket systemd passed, if this process was started by a socket unit
    /// (`LISTEN_PID` is ours and `LISTEN_FDS` ≥ 1: the socket is fd 3).
    public static func systemdSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32? {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
            let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1
        else { return nil }
        return 3
    }

    private static let connectionIDs = NIOLockedValueBox<UInt64>(0)

    /// The clients' connections have a thread of their own: an event, a reply, does not wait
    /// behind the transfers' I/O (hundreds of responses arriving at once) on the engine's loops.
    static let clientLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    private static func bootstrap(daemon: Daemon) -> ServerBootstrap {
        let configuration = daemon.configuration
        let logger = daemon.logger
        let open = NIOLockedValueBox(0)  // connections of this listener now
        let limits = ConnectionHandler.Limits(
            stallTimeout: .interval(configuration.stallTimeout), handshakeTimeout: .interval(configuration.handshakeTimeout))
        return ServerBootstrap(group: clientLoops)
            .serverChannelOption(.backlog, value: 128)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 << 10, high: 1 << 20))
            .childChannelInitializer { channel in
                PeerCredentials.of(channel).flatMap { peer in
                    guard peer.uid == getuid() else {
                        logger.warning("refused a connection from another user", metadata: ["uid": "\(peer.uid)", "pid": "\(peer.pid)"])
                        return channel.close()
                    }
                    let count = open.withLockedValue { $0 += 1; return $0 }
                    channel.closeFuture.whenComplete { _ in open.withLockedValue { $0 -= 1 } }
                    let id = connectionIDs.withLockedValue { $0 += 1; return $0 }
                    let connection = ClientConnection(
                        id: id, peer: peer, channel: channel, maximumOutboundBytes: configuration.maximumOutboundBytes,
                        maximumRequestsInFlight: configuration.maximumRequestsInFlight, logger: logger)
                    // One over the limit is answered `busy` once its hello is read (closing
                    // before that would show the client a broken pipe, not the reason).
                    let refusal = count > configuration.maximumConnections
                        ? FerryProtocolError(.busy, "ferryd holds \(configuration.maximumConnections) connections, its limit: try again shortly")
                        : nil
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            IdleStateHandler(readTimeout: .interval(configuration.idleTimeout)),
                            ByteToMessageHandler(FrameDecoder(maximumFrameSize: configuration.maximumFrameSize)),
                            MessageToByteHandler(FrameEncoder()),
                            ConnectionHandler(
                                connection: connection, daemon: daemon, daemonVersion: configuration.daemonVersion, limits: limits,
                                refusing: refusal),
                        ])
                    }
                }
            }
    }

    /// Stops accepting connections and removes the socket file.
    public func close() async {
        try? await channel.close()
        if let socketURL { try? FileManager.default.removeItem(at: socketURL) }
    }

    /// Completes when the listening socket closes.
    public func closeFuture() async throws {
        try await channel.closeFuture.get()
    }
}

extension TimeAmount {
    /// The configuration's seconds as NIO's time amount.
    fileprivate static func interval(_ seconds: TimeInterval) -> TimeAmount {
        .nanoseconds(Int64(seconds * 1_000_000_000))
    }
}
