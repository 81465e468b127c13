// byteclub-server: the self-hostable service the tutorials talked to. See docs/byteclub-server.md.
import ArgumentParser
import ByteClubServer
import Foundation
import Logging

@main
struct ByteClubServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "byteclub-server",
        abstract: "Dropbox-v1-style files, Imgur-style images and request bins on 127.0.0.1.",
        discussion: "With no subcommand it runs the server (`serve`); `accounts` manages the club's members, `clients` its OAuth apps.",
        subcommands: [ServeCommand.self, AccountsCommand.self, ClientsCommand.self],
        defaultSubcommand: ServeCommand.self)
}

/// The server itself, the default subcommand: `byteclub-server [OPTIONS]` is
/// `byteclub-server serve [OPTIONS]`. (Its options are not the root command's, whose options
/// would also be matched after a subcommand and take `accounts --data-dir` for themselves.)
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the server (the default when no subcommand is given).",
        discussion: """
            Every option can also be set in the environment as BYTECLUB_<OPTION> (for example
            BYTECLUB_PORT=9000, BYTECLUB_DATA_DIR=/srv/byteclub); a flag wins over the environment.
            Data lives in $XDG_DATA_HOME/byteclub (or ~/.local/share/byteclub) unless --data-dir says otherwise.
            """)

    @Option(help: "Address to bind.") var host: String?
    @Option(help: "TCP port (0: any free port).") var port: Int?
    @Option(name: .customLong("data-dir"), help: "Directory for the database and files (with --database-url: the files only).") var dataDir: String?
    @Option(name: .customLong("database-url"), help: "Keep the metadata in PostgreSQL (postgres://user:password@host:port/db), shareable by several instances.")
    var databaseURL: String?
    @Option(name: .customLong("database-pool-size"), help: "Connections to PostgreSQL at most (default 10).") var databasePoolSize: Int?
    @Option(name: .customLong("public-url"), help: "Base URL put in links (default: the bound address).") var publicURL: String?
    @Option(help: "Bytes each namespace (a club's shared folder) may store (507 past it).") var quota: Int64?
    @Option(name: .customLong("max-body"), help: "Largest request body in bytes.") var maxBody: Int64?
    @Option(name: .customLong("max-image"), help: "Largest image in bytes.") var maxImage: Int?
    @Option(name: .customLong("max-header"), help: "Largest request head in bytes.") var maxHeader: Int?
    @Option(name: .customLong("client-rate-limit"), help: "Images-API requests per window per Client-ID.") var clientRateLimit: Int?
    @Option(name: .customLong("user-rate-limit"), help: "Images-API requests per window per client address.") var userRateLimit: Int?
    @Option(name: .customLong("rate-window"), help: "Rate-limit window in seconds.") var rateWindow: Double?
    @Option(name: .customLong("resumable-timeout"), help: "Seconds an interrupted resumable upload is kept.") var resumableTimeout: Double?
    @Option(name: .customLong("shutdown-grace"), help: "Seconds running requests get to finish after SIGTERM (default 10).") var shutdownGrace: Double?
    @Option(name: .customLong("longpoll-limit"), help: "Clients that may wait in /1/longpoll_delta at once (503 past it; default 1000).") var longPollLimit: Int?
    @Option(name: .customLong("oauth-code-lifetime"), help: "Seconds an OAuth authorization code can be redeemed (default 60).") var oauthCodeLifetime: Double?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error, critical.") var logLevel: String?
    @Option(name: .customLong("dev-access-token"), help: "Access token for the development account when first created.") var devAccessToken: String?
    @Option(name: .customLong("dev-app-key"), help: "App key for the development account when first created.") var devAppKey: String?
    @Option(name: .customLong("dev-client-id"), help: "Client-ID for the development account when first created.") var devClientID: String?

    @Option(name: .customLong("fault-drop-after"), help: "Fault injection: close a connection after N bytes.") var faultDropAfter: Int64?
    @Option(name: .customLong("fault-drop-connections"), help: "Fault injection: drop only the first N connections (default 1; 0 = all).") var faultDropConnections: Int?
    @Option(name: .customLong("fault-stall-after"), help: "Fault injection: stall a response after N bytes.") var faultStallAfter: Int64?
    @Option(name: .customLong("fault-stall-seconds"), help: "Fault injection: length of the stall.") var faultStallSeconds: Double?
    @Option(name: .customLong("fault-throttle"), help: "Fault injection: cap responses to N bytes per second.") var faultThrottle: Int?
    @Option(name: .customLong("fault-fail-next"), help: "Fault injection: answer the next K requests with an error.") var faultFailNext: Int?
    @Option(name: .customLong("fault-fail-status"), help: "Fault injection: 503 or 429.") var faultFailStatus: Int?
    @Option(name: .customLong("fault-retry-after"), help: "Fault injection: seconds in Retry-After.") var faultRetryAfter: Int?

    func validate() throws {
        if let status = faultFailStatus, status != 503, status != 429 {
            throw ValidationError("--fault-fail-status must be 503 or 429")
        }
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be 0...65535") }
        if let longPollLimit, longPollLimit < 1 { throw ValidationError("--longpoll-limit must be at least 1") }
        if let shutdownGrace, !(0...3600).contains(shutdownGrace) { throw ValidationError("--shutdown-grace must be 0...3600 seconds") }
        if let databasePoolSize, !(1...200).contains(databasePoolSize) { throw ValidationError("--database-pool-size must be 1...200") }
        if let oauthCodeLifetime, !(0...600).contains(oauthCodeLifetime) { throw ValidationError("--oauth-code-lifetime must be 0...600 seconds") }
    }

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        func pick<T: LosslessStringConvertible>(_ flag: T?, _ name: String) -> T? { flag ?? env["BYTECLUB_" + name].flatMap(T.init) }

        let level = pick(logLevel, "LOG_LEVEL").flatMap(Logger.Level.init(rawValue:)) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var configuration = ByteClubConfiguration()
        if let v = pick(host, "HOST") { configuration.host = v }
        if let v = pick(port, "PORT") { configuration.port = v }
        if let v = pick(dataDir, "DATA_DIR") { configuration.dataDirectory = v }
        configuration.databaseURL = pick(databaseURL, "DATABASE_URL")
        if let v = pick(databasePoolSize, "DATABASE_POOL_SIZE") { configuration.databasePoolSize = v }
        configuration.publicURL = pick(publicURL, "PUBLIC_URL")
        if let v = pick(quota, "QUOTA") { configuration.quotaBytes = v }
        if let v = pick(maxBody, "MAX_BODY") { configuration.maxBodyBytes = v }
        if let v = pick(maxImage, "MAX_IMAGE") { configuration.maxImageBytes = v }
        if let v = pick(maxHeader, "MAX_HEADER") { configuration.maxHeaderBytes = v }
        if let v = pick(clientRateLimit, "CLIENT_RATE_LIMIT") { configuration.clientRateLimit = v }
        if let v = pick(userRateLimit, "USER_RATE_LIMIT") { configuration.userRateLimit = v }
        if let v = pick(rateWindow, "RATE_WINDOW") { configuration.rateLimitWindow = v }
        if let v = pick(resumableTimeout, "RESUMABLE_TIMEOUT") { configuration.resumableUploadTimeout = v }
        if let v = pick(shutdownGrace, "SHUTDOWN_GRACE") { configuration.shutdownGracePeriod = v }
        if let v = pick(longPollLimit, "LONGPOLL_LIMIT") { configuration.longPollWaiterLimit = v }
        if let v = pick(oauthCodeLifetime, "OAUTH_CODE_LIFETIME") { configuration.oauthCodeLifetime = v }
        configuration.devCredentials = DevCredentials(
            appKey: pick(devAppKey, "DEV_APP_KEY"), accessToken: pick(devAccessToken, "DEV_ACCESS_TOKEN"),
            clientID: pick(devClientID, "DEV_CLIENT_ID"))

        var faults = FaultInjection()
        if let v = pick(faultDropAfter, "FAULT_DROP_AFTER") { faults.dropAfterBytes = v }
        if let v = pick(faultDropConnections, "FAULT_DROP_CONNECTIONS") { faults.dropConnections = v == 0 ? nil : v }
        if let v = pick(faultStallAfter, "FAULT_STALL_AFTER") { faults.stallAfterBytes = v }
        if let v = pick(faultStallSeconds, "FAULT_STALL_SECONDS") { faults.stallSeconds = v }
        if let v = pick(faultThrottle, "FAULT_THROTTLE") { faults.throttleBytesPerSecond = v }
        if let v = pick(faultFailNext, "FAULT_FAIL_NEXT") { faults.failNextRequests = v }
        if let v = pick(faultFailStatus, "FAULT_FAIL_STATUS") { faults.failStatus = v }
        if let v = pick(faultRetryAfter, "FAULT_RETRY_AFTER") { faults.retryAfterSeconds = v }
        if faults != FaultInjection() { configuration.faults = faults }

        let logger = Logger(label: "byteclub")
        // A bad or unreachable database URL is an error naming it (never its password): ArgumentParser
        // prints "Error: …" and exits 1.
        let server = try await ByteClubServer(configuration: configuration, logger: logger)
        let account = server.devAccount
        if server.cleanedFiles > 0 { logger.notice("removed \(server.cleanedFiles) file(s) an interrupted run left behind") }
        if let url = server.databaseDescription {
            say("byteclub-server: metadata in \(url), files in \(configuration.dataDirectory)/files")
        } else {
            say("byteclub-server: data in \(configuration.dataDirectory)")
        }
        say(account.created ? "Created the development account. Its credentials:" : "Development account:")
        say(credentialLines(appKey: account.appKey, appSecret: account.appSecret, accessToken: account.accessToken, clientID: account.clientID))
        if account.accessTokenRevoked {
            say("  (that access token was revoked: `byteclub-server accounts token dev` issues a new one)")
        }
        if configuration.faults != nil { say("WARNING: fault injection is ON (\(faults))") }
        let host = configuration.host
        try await server.run(handleSignals: true) { port in
            let shown = host.contains(":") ? "[\(host)]" : host
            say("listening on http://\(shown):\(port)")
        }
        say("byteclub-server: stopped")
    }
}

/// The credentials block the server prints for the development account at start and
/// `accounts add` prints for a new member: one `NAME=value` a line, ready for `export`.
func credentialLines(appKey: String, appSecret: String, accessToken: String, clientID: String) -> String {
    """
      BYTECLUB_APP_KEY=\(appKey)
      BYTECLUB_APP_SECRET=\(appSecret)
      BYTECLUB_ACCESS_TOKEN=\(accessToken)
      BYTECLUB_CLIENT_ID=\(clientID)
    """
}

/// Prints a line to stdout at once (stdout may be a pipe read by a script or a test).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
