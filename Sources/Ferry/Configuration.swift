public import FerryCore
public import FerryEngine
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
    enum Kind: Sendable, Hashable { case `default`, ephemeral, background }
    let kind: Kind

    /// The background session's identifier; nil for `.default` and `.ephemeral`.
    public private(set) var identifier: String?
    /// The app group whose shared container holds the session's files (upload bodies made
    /// from `Data`, finished downloads). An app and its share extension set the same group
    /// and the same ``identifier`` to share the session. nil: a directory of the session's own.
    public var sharedContainerIdentifier: String?
    /// Background sessions: the environment Ferry's folders and ferryd come from
    /// (`FERRY_DATA_DIR`, `FERRY_RUNTIME_DIR`, `XDG_*`, `FERRYD_PATH`); nil, the process's own.
    /// A ferryd the session starts gets it too. Tests give each ferryd its own folders this way.
    public var ferryEnvironment: [String: String]?

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
    /// Retries of failed requests, by the one rulebook (docs/retries.md). `.none` by default
    /// in-process, as URLSession; `.standard` retries lost connections and `429`/`503`.
    /// Background sessions send it with each task to ferryd (`.untilResourceTimeout`).
    public var retryPolicy: RetryPolicy = .none
    /// Uploads of 1 MiB or more from data or files use the IETF resumable-upload protocol
    /// when the server speaks it.
    public var resumableUploads: ResumableUploadMode = .automatic
    /// The largest body a data task keeps in memory; more fails with
    /// `dataLengthExceedsMaximum` (use a download task). 256 MiB.
    public var maximumDataTaskBodySize: Int = 256 << 20
    /// PEM files of extra certificate authorities to trust (the system store is always used).
    /// Background sessions send them to ferryd, which trusts them for this session's tasks.
    public var additionalTrustedCertificateFiles: [String] = []
    /// The certificate and key presented when a server asks for one (mutual TLS), unless the
    /// delegate answers the client-certificate challenge with another. Background sessions
    /// send it to ferryd (paths and passphrase), which presents it for this session's tasks.
    public var clientIdentity: ClientIdentity?
    /// Where downloads are written while they run. The system temporary directory.
    public var downloadDirectory: URL = FileManager.default.temporaryDirectory

    /// Where the session's cookies are kept: ``HTTPCookieStorage/shared`` (on disk, this
    /// app's) for `.default` and background sessions, a storage of its own in memory for
    /// `.ephemeral` ones; nil keeps none. Every request sends the cookies that match it and
    /// every response's `Set-Cookie` is stored, redirects included.
    public var httpCookieStorage: HTTPCookieStorage?
    /// false: no cookies are sent or stored.
    public var httpShouldSetCookies = true
    /// Which cookies responses may set; the platform's default, `.onlyFromMainDocumentDomain`,
    /// takes them all here (a Ferry request has no main document).
    public var httpCookieAcceptPolicy: HTTPCookie.AcceptPolicy = .onlyFromMainDocumentDomain

    /// Credentials for servers that answer `401` (HTTP Basic and Digest): ``URLCredentialStorage/shared``
    /// for `.default` and background sessions, a storage of its own for `.ephemeral` ones; nil
    /// keeps none. Default handling of a challenge uses its default credential for the
    /// protection space; a credential the delegate gave (persistence other than `.none`) is
    /// kept there once the server accepted it. In memory only.
    public var urlCredentialStorage: URLCredentialStorage?

    /// The HTTP proxies the session's requests go through; nil (the default): the
    /// environment's (`http_proxy`, `https_proxy`, `no_proxy`, as curl reads them; loopback
    /// hosts go direct), ``ProxySettings/direct`` for none. URLSession's
    /// `connectionProxyDictionary` sets it. Background sessions carry what it resolves to.
    public var proxies: ProxySettings?

    /// ``proxies``, or the environment's when nil.
    var resolvedProxies: ProxySettings {
        proxies ?? .environment(ferryEnvironment ?? ProcessInfo.processInfo.environment)
    }

    /// Where `GET` data tasks' responses are kept and answered from (HTTP's caching rules):
    /// ``URLCache/shared`` (memory and disk) for `.default`, a cache of its own in memory for
    /// `.ephemeral`, none for background sessions (setting one refuses the session).
    public var urlCache: URLCache?
    /// How requests use ``urlCache`` unless they say (URLRequest's `cachePolicy`).
    public var requestCachePolicy: CacheUse = .useProtocolCachePolicy

    /// The cookies the session's transfers send and store, or nil.
    var cookieJar: (any CookieJar)? {
        httpShouldSetCookies ? httpCookieStorage?.jar(acceptPolicy: httpCookieAcceptPolicy) : nil
    }

    // The network a session's tasks may use, judged on the links and routes of the machine
    // (rtnetlink) and the classes of docs/ferryd.md, "Network" (the `FERRYD_*_INTERFACES`
    // patterns, NetworkManager's metered devices). ferryd holds a background task (without
    // using an attempt) while the route to its host does not satisfy these; `ferry explain`
    // says why. An in-process task is judged before it connects: it fails at once with
    // `notConnectedToInternet`, or with `waitsForConnectivity` waits (its resource time-out
    // still running). The default (everything allowed, no waiting) asks nothing and starts no
    // monitor.

    /// Wait for the network instead of failing with `notConnectedToInternet` when no link the
    /// session may use reaches the host, and tell the delegate once
    /// (``SessionDelegate/session(_:taskIsWaitingForConnectivity:)``). The wait counts toward
    /// `timeoutIntervalForResource`, not `timeoutIntervalForRequest`. A background task waits
    /// either way, as on Apple's platforms; this only decides whether the app is told.
    ///
    /// ```swift
    /// var configuration = Configuration.default
    /// configuration.waitsForConnectivity = true   // offline: wait, don't fail
    /// ```
    public var waitsForConnectivity: Bool = false
    /// May use links counted as expensive (metered, cellular). false: such a route is
    /// `notConnectedToInternet` with `networkUnavailableReason` `.expensive` (or a wait).
    public var allowsExpensiveNetworkAccess: Bool = true
    /// May use links counted as constrained (`FERRYD_CONSTRAINED_INTERFACES`).
    public var allowsConstrainedNetworkAccess: Bool = true
    /// May use cellular (WWAN) links.
    public var allowsCellularAccess: Bool = true
    /// Background sessions: the transfers can wait for an unmetered link and mains power.
    /// Ignored by in-process sessions, as on Apple's platforms.
    public var isDiscretionary: Bool = false
    /// Background sessions: ferryd starts the app (its manifest's `launch`) when the session's
    /// events wait and no process owns it. false: they wait until the app attaches by itself.
    public var sessionSendsLaunchEvents: Bool = true

    /// How the session's transfers are made, as ferryd is told it (paths made absolute: ferryd
    /// does not run in this process's folder).
    var transferOptions: SessionTransferOptions {
        SessionTransferOptions(
            additionalTrustedCertificateFiles: additionalTrustedCertificateFiles.map { URL(fileURLWithPath: $0).standardizedFileURL.path },
            allowsHTTP2: allowsHTTP2, usesResumableUploads: resumableUploads == .automatic, proxies: resolvedProxies,
            clientIdentity: clientIdentity?.absolute(relativeTo: FileManager.default.currentDirectoryPath))
    }

    /// What the session allows of the network, as ferryd is told it.
    package var networkAccess: NetworkAccess {
        get {
            NetworkAccess(
                waitsForConnectivity: waitsForConnectivity, allowsExpensiveNetworkAccess: allowsExpensiveNetworkAccess,
                allowsConstrainedNetworkAccess: allowsConstrainedNetworkAccess, allowsCellularAccess: allowsCellularAccess,
                isDiscretionary: isDiscretionary)
        }
        set {
            waitsForConnectivity = newValue.waitsForConnectivity
            allowsExpensiveNetworkAccess = newValue.allowsExpensiveNetworkAccess
            allowsConstrainedNetworkAccess = newValue.allowsConstrainedNetworkAccess
            allowsCellularAccess = newValue.allowsCellularAccess
            isDiscretionary = newValue.isDiscretionary
        }
    }

    /// Cookies kept on disk for this app (``HTTPCookieStorage/shared``).
    public static var `default`: Configuration {
        var configuration = Configuration(kind: .default)
        configuration.httpCookieStorage = .shared
        configuration.urlCredentialStorage = .shared
        configuration.urlCache = .shared
        return configuration
    }
    /// Nothing kept on disk: the session's cookies live in a storage of its own, in memory,
    /// and go with it.
    public static var ephemeral: Configuration {
        var configuration = Configuration(kind: .ephemeral)
        configuration.httpCookieStorage = HTTPCookieStorage()
        configuration.urlCredentialStorage = URLCredentialStorage()
        configuration.urlCache = URLCache(memoryCapacity: 4 << 20, diskCapacity: 0)
        return configuration
    }

    /// A session whose tasks are carried by ferryd: they go on after this process exits,
    /// crashes or the machine restarts, and ferryd starts the containing app to deliver their
    /// results when nobody is connected.
    ///
    /// ```swift
    /// var configuration = Configuration.background(identifier: "com.example.sharealike.bg")
    /// configuration.sharedContainerIdentifier = "group.com.example.sharealike"
    /// let session = try Session.background(configuration, delegate: delegate)
    /// let task = session.uploadTask(with: request, fromFile: photo)
    /// task.resume()   // on disk in ferryd's store when this returns
    /// ```
    ///
    /// Only one process at a time is connected to a background session; another one gets
    /// ``FerryError/Code/backgroundSessionInUseByAnotherProcess``. Retries are ferryd's, with
    /// this configuration's ``retryPolicy`` (sent with each task; `.untilResourceTimeout`
    /// unless you set another): lost connections and `429`/`503` are retried by the one
    /// rulebook (docs/retries.md) until ``timeoutIntervalForResource``.
    public static func background(identifier: String) -> Configuration {
        var configuration = Configuration(kind: .background)
        configuration.identifier = identifier
        configuration.httpCookieStorage = .shared
        configuration.urlCredentialStorage = .shared
        configuration.retryPolicy = .untilResourceTimeout
        return configuration
    }

    /// Whether tasks run in ferryd rather than in this process.
    public var isBackground: Bool { kind == .background }

    /// What a background session cannot honour, as an error to refuse it with: every other
    /// property is carried to ferryd (per session or with each task) or used by the library
    /// (docs/background.md has the list; `BackgroundConfigurationTests` walks them all).
    public var backgroundRefusal: FerryError? {
        guard isBackground else { return nil }
        let defaults = Configuration.background(identifier: identifier ?? "")
        if downloadDirectory.standardizedFileURL != defaults.downloadDirectory.standardizedFileURL {
            return FerryError(.unsupportedBackgroundConfiguration,
                              "downloadDirectory is for in-process sessions: ferryd keeps a background session's downloads in its container (sharedContainerIdentifier) or its own folder; leave it unset")
        }
        if urlCache != nil || requestCachePolicy != .useProtocolCachePolicy {
            return FerryError(.unsupportedBackgroundConfiguration,
                              "urlCache and requestCachePolicy are for in-process sessions: ferryd keeps no cache; leave them unset")
        }
        if maximumDataTaskBodySize != defaults.maximumDataTaskBodySize {
            return FerryError(.unsupportedBackgroundConfiguration,
                              "maximumDataTaskBodySize is for in-process sessions: a background data task's body comes whole in events; use a download task for large bodies")
        }
        return nil
    }

    var engineConfiguration: EngineConfiguration {
        var engine = EngineConfiguration()
        engine.idleTimeout = timeoutIntervalForRequest
        engine.maximumConnectionsPerHost = httpMaximumConnectionsPerHost
        engine.allowsHTTP2 = allowsHTTP2
        engine.additionalTrustedCertificateFiles = additionalTrustedCertificateFiles
        engine.clientIdentity = clientIdentity
        return engine
    }
}
