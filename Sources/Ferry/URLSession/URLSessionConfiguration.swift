public import FerryCore
public import Foundation
import NIOConcurrencyHelpers

/// URLSession's configuration class, for ported code: make one, set its properties, hand it
/// to ``URLSession/init(configuration:delegate:delegateQueue:)``, which takes a copy.
///
/// ```swift
/// let configuration = URLSessionConfiguration.background(withIdentifier: "com.example.uploads")
/// configuration.sharedContainerIdentifier = "group.com.example"
/// configuration.httpAdditionalHeaders = ["Authorization": "Bearer \(token)"]
/// let session = URLSession(configuration: configuration, delegate: uploads, delegateQueue: nil)
/// ```
///
/// Each property is Ferry's ``Configuration``'s of the same name (``configuration``); the
/// ones Ferry does not act on yet are kept and listed in docs/porting.md.
open class URLSessionConfiguration: @unchecked Sendable {  // every property goes through `state`'s lock
    private let state: NIOLockedValueBox<Configuration>
    private let extras = NIOLockedValueBox(Extras())

    /// What only URLSession's spelling has.
    private struct Extras {
        var httpShouldUsePipelining = false
        var connectionProxyDictionary: [AnyHashable: Any]?
    }

    /// The spelling of a Ferry configuration.
    public init(_ configuration: Configuration) {
        state = NIOLockedValueBox(configuration)
    }

    open class var `default`: URLSessionConfiguration { URLSessionConfiguration(.default) }
    open class var ephemeral: URLSessionConfiguration { URLSessionConfiguration(.ephemeral) }
    open class func background(withIdentifier identifier: String) -> URLSessionConfiguration {
        URLSessionConfiguration(.background(identifier: identifier))
    }

    /// Ferry's configuration with everything set here.
    public var configuration: Configuration { state.withLockedValue { $0 } }

    /// A copy (URLSession takes one, so later changes here do not reach a made session).
    open func copy() -> URLSessionConfiguration {
        let copy = URLSessionConfiguration(configuration)
        let extras = self.extras.withLockedValue { $0 }
        copy.extras.withLockedValue { $0 = extras }
        return copy
    }

    private func value<T>(_ path: KeyPath<Configuration, T>) -> T { state.withLockedValue { $0[keyPath: path] } }
    private func update<T>(_ path: WritableKeyPath<Configuration, T>, _ value: T) { state.withLockedValue { $0[keyPath: path] = value } }

    open var identifier: String? { value(\.identifier) }
    open var sharedContainerIdentifier: String? {
        get { value(\.sharedContainerIdentifier) }
        set { update(\.sharedContainerIdentifier, newValue) }
    }
    open var timeoutIntervalForRequest: TimeInterval {
        get { value(\.timeoutIntervalForRequest) }
        set { update(\.timeoutIntervalForRequest, newValue) }
    }
    open var timeoutIntervalForResource: TimeInterval {
        get { value(\.timeoutIntervalForResource) }
        set { update(\.timeoutIntervalForResource, newValue) }
    }
    open var httpMaximumConnectionsPerHost: Int {
        get { value(\.httpMaximumConnectionsPerHost) }
        set { update(\.httpMaximumConnectionsPerHost, newValue) }
    }
    open var waitsForConnectivity: Bool {
        get { value(\.waitsForConnectivity) }
        set { update(\.waitsForConnectivity, newValue) }
    }
    open var allowsCellularAccess: Bool {
        get { value(\.allowsCellularAccess) }
        set { update(\.allowsCellularAccess, newValue) }
    }
    open var allowsExpensiveNetworkAccess: Bool {
        get { value(\.allowsExpensiveNetworkAccess) }
        set { update(\.allowsExpensiveNetworkAccess, newValue) }
    }
    open var allowsConstrainedNetworkAccess: Bool {
        get { value(\.allowsConstrainedNetworkAccess) }
        set { update(\.allowsConstrainedNetworkAccess, newValue) }
    }
    open var isDiscretionary: Bool {
        get { value(\.isDiscretionary) }
        set { update(\.isDiscretionary, newValue) }
    }

    /// Headers added to every request. Keys and values are strings (others are ignored, as
    /// the platform ignores what is not a string).
    open var httpAdditionalHeaders: [AnyHashable: Any]? {
        get {
            let headers = value(\.httpAdditionalHeaders)
            return headers.count == 0 ? nil : headers.reduce(into: [AnyHashable: Any]()) { $0[$1.name] = $1.value }
        }
        set {
            let pairs = (newValue ?? [:]).compactMap { key, value -> (String, String)? in
                guard let name = key.base as? String, let value = value as? String else { return nil }
                return (name, value)
            }
            update(\.httpAdditionalHeaders, HeaderFields(pairs))
        }
    }

    /// Ferry's own: PEM files of extra certificate authorities to trust (a private CA), in
    /// process and in ferryd. The platform's way, a delegate trusting the server, works too.
    open var additionalTrustedCertificateFiles: [String] {
        get { value(\.additionalTrustedCertificateFiles) }
        set { update(\.additionalTrustedCertificateFiles, newValue) }
    }
    /// Ferry's own: the client certificate presented when a server asks for one, unless the
    /// delegate answers with another; carried to ferryd for background sessions.
    open var clientIdentity: ClientIdentity? {
        get { value(\.clientIdentity) }
        set { update(\.clientIdentity, newValue) }
    }

    /// Ferry's own: retries by the one rulebook (none by default in-process, as URLSession).
    open var retryPolicy: RetryPolicy {
        get { value(\.retryPolicy) }
        set { update(\.retryPolicy, newValue) }
    }

    private func extra<T>(_ path: KeyPath<Extras, T>) -> T { extras.withLockedValue { $0[keyPath: path] } }
    private func setExtra<T>(_ path: WritableKeyPath<Extras, T>, _ value: T) { extras.withLockedValue { $0[keyPath: path] = value } }

    open var requestCachePolicy: URLRequest.CachePolicy {
        get { URLRequest.CachePolicy(value(\.requestCachePolicy)) }
        set { update(\.requestCachePolicy, newValue.cacheUse) }
    }
    open var urlCache: URLCache? {
        get { value(\.urlCache) }
        set { update(\.urlCache, newValue) }
    }
    open var sessionSendsLaunchEvents: Bool {
        get { value(\.sessionSendsLaunchEvents) }
        set { update(\.sessionSendsLaunchEvents, newValue) }
    }
    open var httpShouldSetCookies: Bool {
        get { value(\.httpShouldSetCookies) }
        set { update(\.httpShouldSetCookies, newValue) }
    }
    open var httpCookieStorage: HTTPCookieStorage? {
        get { value(\.httpCookieStorage) }
        set { update(\.httpCookieStorage, newValue) }
    }
    open var urlCredentialStorage: URLCredentialStorage? {
        get { value(\.urlCredentialStorage) }
        set { update(\.urlCredentialStorage, newValue) }
    }
    open var httpCookieAcceptPolicy: HTTPCookie.AcceptPolicy {
        get { value(\.httpCookieAcceptPolicy) }
        set { update(\.httpCookieAcceptPolicy, newValue) }
    }
    /// Kept; HTTP/1.1 pipelining is never used.
    open var httpShouldUsePipelining: Bool {
        get { extra(\.httpShouldUsePipelining) }
        set { setExtra(\.httpShouldUsePipelining, newValue) }
    }
    /// The proxies, in CFNetwork's keys (`kCFNetworkProxiesHTTPEnable`, `…HTTPProxy`,
    /// `…HTTPPort`, the `HTTPS` three, `kCFNetworkProxiesExceptionsList`, `kCFProxyUsernameKey`,
    /// `kCFProxyPasswordKey`): sets ``Configuration/proxies``. nil: the environment's; `[:]`: none.
    open var connectionProxyDictionary: [AnyHashable: Any]? {
        get { extra(\.connectionProxyDictionary) }
        set {
            setExtra(\.connectionProxyDictionary, newValue)
            update(\.proxies, newValue.map(ProxySettings.init(connectionProxyDictionary:)))
        }
    }
}
