public import Foundation

/// Everything `byteclub-server` can be told at start: where it listens, where it keeps its data,
/// its limits, and (for clients' tests) which faults to inject.
///
/// The defaults are what `byteclub-server` with no flags uses:
///
/// ```swift
/// var configuration = ByteClubConfiguration()
/// configuration.port = 0                      // any free port; read it from `ByteClubServer.run(onListening:)`
/// configuration.dataDirectory = "/tmp/bc-data"
/// configuration.quotaBytes = 1 << 30
/// ```
public struct ByteClubConfiguration: Sendable {
    /// Address to bind. Only loopback is the default; anything else is the operator's choice.
    public var host: String = "127.0.0.1"
    /// TCP port; `0` lets the kernel choose one.
    public var port: Int = 8080
    /// Base URL put into links (image `link`, bin URLs). `nil`: `http://host:port` as bound.
    public var publicURL: String? = nil
    /// Directory for the SQLite database and the files; created `0700` when missing. With
    /// ``databaseURL`` only the files (`files/`) are kept here: instances sharing a database
    /// share this directory too.
    public var dataDirectory: String = ByteClubConfiguration.defaultDataDirectory()
    /// A PostgreSQL database for the metadata instead of the data directory's SQLite file:
    /// `postgres://user:password@host:5432/database` (see docs/byteclub-server.md). Several
    /// servers may share it (and one data directory); `nil`: SQLite.
    public var databaseURL: String? = nil
    /// Connections each server keeps to PostgreSQL at most (with ``databaseURL``).
    public var databasePoolSize: Int = 10
    /// Largest request body accepted anywhere (files_put, chunks, resumable uploads).
    public var maxBodyBytes: Int64 = 8 << 30
    /// Largest image accepted by the images API (Imgur's own limit was 20 MB).
    public var maxImageBytes: Int = 20 << 20
    /// Largest request head (all header fields together).
    public var maxHeaderBytes: Int = 64 << 10
    /// Bytes each namespace (a club's shared folder) may store: its files and the images its
    /// members uploaded; past it uploads get 507.
    public var quotaBytes: Int64 = 10 << 30
    /// Requests per window a `Client-ID` may make to the images API (`X-RateLimit-ClientLimit`).
    public var clientRateLimit: Int = 12_500
    /// Requests per window one user (client address) may make (`X-RateLimit-UserLimit`).
    public var userRateLimit: Int = 500
    /// Length of the rate-limit window in seconds.
    public var rateLimitWindow: TimeInterval = 3600
    /// Largest body a request bin keeps of each request; the rest is counted, not stored.
    public var binBodyLimit: Int = 64 << 10
    /// Requests kept per bin, newest first.
    public var binRequestLimit: Int = 200
    /// Seconds an interrupted resumable upload waits for its client to come back.
    public var resumableUploadTimeout: TimeInterval = 3600
    /// Journal rows one `/1/delta` answer covers at most; `has_more` says when there are more.
    public var deltaPageSize: Int = 1000
    /// Clients that may wait in `/1/longpoll_delta` at once; past it, 503 with `Retry-After`.
    public var longPollWaiterLimit: Int = 1000
    /// Seconds between a waiting long-poll's re-reads of the change journal, which find the
    /// changes another process sharing the database wrote (this process's wake at once).
    public var longPollRecheckInterval: TimeInterval = 0.5
    /// Entries returned by a folder listing before `406` (Dropbox's `file_limit`, default 10,000).
    public var defaultFileLimit: Int = 10_000
    /// Seconds running requests get to finish after SIGTERM/SIGINT (or a graceful shutdown of
    /// ``ByteClubServer/makeService(onListening:)``); then their connections are closed.
    public var shutdownGracePeriod: TimeInterval = 10
    /// Seconds an OAuth authorization code may be redeemed at `/oauth2/token` after it was
    /// issued (RFC 6749 4.1.2 recommends at most 10 minutes; one is plenty for a native app).
    public var oauthCodeLifetime: TimeInterval = 60
    /// Seconds the approve/deny page of `/oauth2/authorize` stays valid (its CSRF token).
    public var oauthConsentLifetime: TimeInterval = 600
    /// Faults to inject, for clients' tests. Off (`nil`) unless a flag turns them on.
    ///
    /// - warning: Never enable on a server people use: it breaks transfers on purpose.
    public var faults: FaultInjection? = nil
    /// Fixed credentials for the development account (tests and scripts); `nil` parts are random.
    public var devCredentials: DevCredentials = .init()

    /// Creates the default configuration.
    public init() {}

    /// `$XDG_DATA_HOME/byteclub`, or `~/.local/share/byteclub` when that variable is unset.
    public static func defaultDataDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return xdg + "/byteclub"
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/share/byteclub"
    }
}

/// Credentials to give the development account the first time it is created.
///
/// ```swift
/// var credentials = DevCredentials()
/// credentials.accessToken = "test-token"   // the rest stays random
/// ```
public struct DevCredentials: Sendable, Equatable {
    /// Dropbox-style app key (`oauth_consumer_key`).
    public var appKey: String?
    /// Access token for the files API (`Authorization: Bearer …`).
    public var accessToken: String?
    /// Imgur-style `Client-ID`.
    public var clientID: String?

    /// Creates credentials; `nil` parts are generated.
    public init(appKey: String? = nil, accessToken: String? = nil, clientID: String? = nil) {
        self.appKey = appKey
        self.accessToken = accessToken
        self.clientID = clientID
    }
}
