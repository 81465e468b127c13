import Foundation
import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
public import ServiceLifecycle

/// The server the tutorials talked to: Dropbox-v1-style files, Imgur-style images, request
/// bins, a web page, resumable uploads and range downloads, on Hummingbird.
///
/// Creating it opens (or creates) the data directory and the development account; running it
/// serves until cancelled or, with `handleSignals`, until SIGTERM/SIGINT (graceful).
///
/// ```swift
/// var configuration = ByteClubConfiguration()
/// configuration.port = 0
/// let server = try await ByteClubServer(configuration: configuration)
/// print(server.devAccount.accessToken)
/// try await server.run { port in print("listening on \(port)") }
/// ```
public struct ByteClubServer: Sendable {
    /// The credentials of the development account.
    public struct DevAccount: Sendable, Equatable {
        /// Dropbox-style app key (`oauth_consumer_key`).
        public var appKey: String
        /// Dropbox-style app secret.
        public var appSecret: String
        /// Bearer token for the files API (and the web page): the account's first token, kept
        /// in clear for this (tokens issued later are stored as digests only).
        public var accessToken: String
        /// Whether ``accessToken`` was revoked (`byteclub-server accounts revoke dev`).
        public var accessTokenRevoked: Bool
        /// `Client-ID` for the images API.
        public var clientID: String
        /// Whether this start created the account (first start on this data directory).
        public var created: Bool
    }

    /// The configuration the server was made with.
    public let configuration: ByteClubConfiguration
    /// The development account's credentials.
    public let devAccount: DevAccount
    /// Files a crash had left behind and this start removed (unfinished temp files, orphan blobs).
    public let cleanedFiles: Int
    /// The PostgreSQL database in use, as `postgres://user@host:port/db` (never its password);
    /// `nil` with the data directory's SQLite.
    public var databaseDescription: String? {
        if case .postgres(let url, _) = try? StoreLocation(configuration) { return url.description }
        return nil
    }
    let state: ServerState
    let logger: Logger

    /// Opens the data directory and the database (migrating it), cleans what a crash left, and
    /// makes sure the development account exists. ``run(handleSignals:onListening:)`` closes
    /// the database when it returns; a server never run is closed with ``close()``.
    public init(configuration: ByteClubConfiguration, logger: Logger = Logger(label: "byteclub")) async throws {
        self.configuration = configuration
        self.logger = logger
        let state = try await ServerState(configuration: configuration, logger: logger)
        self.state = state
        let account: Account, created: Bool, tokenActive: Bool
        do {
            cleanedFiles = try await state.cleanOrphans()
            (account, created, tokenActive) = try await state.store.ensureDevAccount(wanted: configuration.devCredentials)
        } catch {
            await state.store.close()
            throw error
        }
        devAccount = DevAccount(appKey: account.appKey, appSecret: account.appSecret, accessToken: account.devAccessToken ?? "",
                                accessTokenRevoked: !tokenActive, clientID: account.clientId, created: created)
        if !Vips.start() { logger.warning("libvips did not start: images get no dimensions or thumbnails") }
    }

    /// Serves until the task is cancelled, or with `handleSignals` until SIGTERM or SIGINT, after
    /// which it stops accepting and lets running requests finish for at most
    /// ``ByteClubConfiguration/shutdownGracePeriod``; then it closes the connections still open
    /// (their unfinished uploads are discarded) and returns.
    /// - Parameter onListening: Called once with the bound port (useful with port `0`).
    public func run(handleSignals: Bool = false, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        do {
            if handleSignals {
                let group = ServiceGroup(configuration: .init(
                    services: [makeService(onListening: onListening)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
                try await group.run()
            } else {
                try await makeApplication(connections: OpenConnections(), onListening: onListening).run()
            }
        } catch {
            await close()
            throw error
        }
        await close()
    }

    /// Closes the database (PostgreSQL: every pooled connection). ``run(handleSignals:onListening:)``
    /// calls it on return; call it yourself after running ``makeService(onListening:)`` in your
    /// own `ServiceGroup`, or for a server never run.
    ///
    /// ```swift
    /// let server = try await ByteClubServer(configuration: configuration)
    /// try await ServiceGroup(services: [server.makeService()], logger: logger).run()
    /// await server.close()
    /// ```
    public func close() async {
        await state.store.close()
    }

    /// The server as a swift-service-lifecycle `Service`, to run in your own `ServiceGroup`; its
    /// graceful shutdown is bounded by ``ByteClubConfiguration/shutdownGracePeriod``.
    ///
    /// ```swift
    /// let group = ServiceGroup(services: [server.makeService()], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public func makeService(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> some Service {
        let connections = OpenConnections()
        let changes = state.store.changes
        return BoundedShutdownService(
            inner: makeApplication(connections: connections, onListening: onListening),
            grace: .milliseconds(Int64(max(0, configuration.shutdownGracePeriod) * 1000)), hardStop: .seconds(3),
            connections: connections, logger: logger, onShutdown: { changes.close() })
    }

    func makeApplication(connections: OpenConnections, onListening: @escaping @Sendable (Int) async -> Void) -> some ApplicationProtocol {
        let state = self.state
        let uploads = ResumableUploads(timeoutSeconds: configuration.resumableUploadTimeout)
        let router = Router(context: ByteClubContext.self)
        let routes = Routes(router: router, table: AllowedMethods())
        router.add(middleware: RequestLogMiddleware())
        router.add(middleware: FaultMiddleware(state: state.faults))
        router.add(middleware: AllowMiddleware(table: routes.table))
        FilesRoutes(state: state).add(to: routes)
        FileOpsRoutes(state: state).add(to: routes)
        DeltaRoutes(state: state).add(to: routes)
        ChunkedUploadRoutes(state: state).add(to: routes)
        ImagesRoutes(state: state).add(to: routes)
        BinsRoutes(state: state).add(to: routes)
        PageRoutes(state: state).add(to: routes)
        OAuthRoutes(state: state).add(to: routes)
        let maxHeaderBytes = configuration.maxHeaderBytes
        let host = configuration.host
        let logger = self.logger
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                ResumableHTTPChannel(
                    responder: responder, uploads: uploads, maxHeaderBytes: maxHeaderBytes, faults: state.faults,
                    connections: connections, closedInputs: state.closedInputs)
            },
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: "byteclub-server"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                state.setBound(host: host, port: port)
                uploads.start(origin: state.baseURL)
                logger.info("listening", metadata: ["url": "\(state.baseURL)"])
                await onListening(port)
            },
            logger: logger
        )
    }
}
