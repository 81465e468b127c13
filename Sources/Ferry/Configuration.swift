public import Foundation

/// How a ``Session`` behaves: the `URLSessionConfiguration` of Ferry.
///
/// ```swift
/// var configuration = Configuration.default
/// configuration.httpAdditionalHeaders = ["Authorization": "Bearer \(token)", "Accept": "application/json"]
/// configuration.timeoutIntervalForRequest = 30
/// configuration.httpMaximumConnectionsPerHost = 4
/// let session = Session(configuration: configuration, delegate: nil)
/// ```
public struct Configuration: Sendable {
    enum Kind: Sendable, Hashable { case `default`, ephemeral }
    let kind: Kind

    /// Headers added to every request (a request's own header of the same name wins).
    public var httpAdditionalHeaders: HeaderFields = [:]
    /// Idle time-out: a task fails with `timedOut` when no byte moves for this long. 60 s.
    public var timeoutIntervalForRequest: TimeInterval = 60
    /// The most a whole task may take, retries included. 7 days, as on the platform.
    public var timeoutIntervalForResource: TimeInterval = 7 * 24 * 3600
    /// Requests in flight to one host at most (and so connections to it). 6.
    public var httpMaximumConnectionsPerHost: Int = 6
    /// Offer HTTP/2 on HTTPS (through ALPN). On by default.
    public var allowsHTTP2: Bool = true
    /// Retries of failed requests. `.none` by default, as URLSession; `.standard` retries
    /// lost connections and `429`/`503` with `Retry-After`.
    public var retryPolicy: RetryPolicy = .none
    /// Uploads of 1 MiB or more from data or files use the IETF resumable-upload protocol
    /// when the server speaks it.
    public var resumableUploads: ResumableUploadMode = .automatic
    /// The largest body a data task keeps in memory; more fails with
    /// `dataLengthExceedsMaximum` (use a download task). 256 MiB.
    public var maximumDataTaskBodySize: Int = 256 << 20
    /// PEM files of extra certificate authorities to trust (the system store is always used).
    public var additionalTrustedCertificateFiles: [String] = []
    /// Where downloads are written while they run. The system temporary directory.
    public var downloadDirectory: URL = FileManager.default.temporaryDirectory

    /// Writes nothing of its own to disk beyond the downloads you ask for.
    ///
    /// Ferry keeps no cookie store or URL cache, so the two in-process kinds differ only
    /// in name today; the distinction is kept for code ported from URLSession.
    public static var `default`: Configuration { Configuration(kind: .default) }
    /// Like `.default`, and promises never to add persistent state later: no caches, no
    /// cookies, no credentials saved.
    public static var ephemeral: Configuration { Configuration(kind: .ephemeral) }

    var engineConfiguration: EngineConfiguration {
        var engine = EngineConfiguration()
        engine.idleTimeout = timeoutIntervalForRequest
        engine.maximumConnectionsPerHost = httpMaximumConnectionsPerHost
        engine.allowsHTTP2 = allowsHTTP2
        engine.additionalTrustedCertificateFiles = additionalTrustedCertificateFiles
        return engine
    }
}
