public import FerryCore
public import FerryEngine
public import Foundation
import Synchronization

/// URLSession's authentication types. A `401` offering HTTP Basic or Digest asks the task's
/// delegate (`urlSession(_:task:didReceive:completionHandler:)`); default handling uses the
/// session's ``URLCredentialStorage`` default for the protection space, then the URL's own
/// user and password, once. Questions about a TLS connection (a server asking for a client
/// certificate; each host's certificates, when the delegate answers them) ask the session's
/// delegate (`urlSession(_:didReceive:completionHandler:)`).
///
/// ```swift
/// func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
///                 completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
///     guard challenge.previousFailureCount == 0 else { return completionHandler(.cancelAuthenticationChallenge, nil) }
///     completionHandler(.useCredential, URLCredential(user: "alice", password: secret, persistence: .forSession))
/// }
/// ```
public final class URLCredential: Sendable, Hashable {
    /// How long a credential the server accepted is kept in the session's storage.
    public enum Persistence: UInt, Sendable {
        case none = 0
        case forSession = 1
        /// Kept for the process's life: Ferry has no keychain (see ``URLCredentialStorage``).
        case permanent = 2
        case synchronizable = 3
    }

    public let user: String?
    public let password: String?
    public let persistence: Persistence
    public var hasPassword: Bool { password != nil }
    /// The client certificate and key (the platform's `SecIdentity`).
    public let identity: ClientIdentity?
    /// More certificates to send with the identity's (DER); Ferry sends the identity's chain.
    public let certificates: [Data]
    /// The server trust this credential accepts (`init(trust:)`).
    let trust: ServerTrust?

    public init(user: String, password: String, persistence: Persistence) {
        self.user = user
        self.password = password
        self.persistence = persistence
        identity = nil
        certificates = []
        trust = nil
    }

    /// A client certificate: answers a `NSURLAuthenticationMethodClientCertificate` challenge.
    /// The platform takes a `SecIdentity`; Ferry names the files (PEM or PKCS#12).
    public init(identity: ClientIdentity, certificates: [Data]? = nil, persistence: Persistence) {
        user = nil
        password = nil
        self.persistence = persistence
        self.identity = identity
        self.certificates = certificates ?? []
        trust = nil
    }

    /// Accepts a server's certificates: answers a `NSURLAuthenticationMethodServerTrust` challenge.
    public init(trust: ServerTrust) {
        user = nil
        password = nil
        persistence = .forSession
        identity = nil
        certificates = []
        self.trust = trust
    }

    /// The engine's credential: kept in the session's storage once accepted unless `.none`.
    var credential: Credential? { user.map { Credential(user: $0, password: password ?? "", keep: persistence != .none) } }

    public static func == (lhs: URLCredential, rhs: URLCredential) -> Bool {
        lhs.user == rhs.user && lhs.password == rhs.password && lhs.persistence == rhs.persistence
            && lhs.identity == rhs.identity && lhs.trust == rhs.trust
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(user) }
}

/// `NSURLAuthenticationMethodHTTPBasic` and the others, as the platform names them.
public let NSURLAuthenticationMethodDefault = "NSURLAuthenticationMethodDefault"
public let NSURLAuthenticationMethodHTTPBasic = "NSURLAuthenticationMethodHTTPBasic"
public let NSURLAuthenticationMethodHTTPDigest = "NSURLAuthenticationMethodHTTPDigest"
/// Asked of the session's delegate for each HTTPS host, before its first request, when the
/// delegate answers it (docs/porting.md).
public let NSURLAuthenticationMethodServerTrust = "NSURLAuthenticationMethodServerTrust"
/// Asked of the session's delegate when a server asks for a client certificate.
public let NSURLAuthenticationMethodClientCertificate = "NSURLAuthenticationMethodClientCertificate"

/// A realm on a server: host, port, protocol, realm and authentication method.
public final class URLProtectionSpace: Sendable, Hashable {
    public let host: String
    public let port: Int
    public let `protocol`: String?
    public let realm: String?
    public let authenticationMethod: String
    public var receivesCredentialSecurely: Bool { `protocol` == "https" || authenticationMethod == NSURLAuthenticationMethodHTTPDigest }
    /// A server-trust challenge's certificates and standard verdict (the platform's `SecTrust`).
    public let serverTrust: ServerTrust?
    /// The authorities a server accepts client certificates from: not known on Ferry (nil).
    public var distinguishedNames: [Data]? { nil }

    public init(host: String, port: Int, protocol: String?, realm: String?, authenticationMethod: String?) {
        self.host = host.lowercased()
        self.port = port
        self.protocol = `protocol`?.lowercased()
        self.realm = realm
        self.authenticationMethod = authenticationMethod ?? NSURLAuthenticationMethodDefault
        serverTrust = nil
    }

    init(_ space: ProtectionSpace, serverTrust: ServerTrust? = nil) {
        host = space.host
        port = space.port
        `protocol` = space.scheme
        realm = space.realm
        authenticationMethod = Self.name(of: space.method)
        self.serverTrust = serverTrust
    }

    /// The platform's name of an authentication method.
    static func name(of method: AuthenticationMethod) -> String {
        switch method {
        case .httpBasic: NSURLAuthenticationMethodHTTPBasic
        case .httpDigest: NSURLAuthenticationMethodHTTPDigest
        case .serverTrust: NSURLAuthenticationMethodServerTrust
        case .clientCertificate: NSURLAuthenticationMethodClientCertificate
        }
    }

    /// Whether a credential kept for this space answers `space` (the default method matches both).
    func covers(_ space: ProtectionSpace) -> Bool {
        let method = Self.name(of: space.method)
        return host == space.host && port == space.port && (`protocol` == nil || `protocol` == space.scheme)
            && realm == space.realm && (authenticationMethod == NSURLAuthenticationMethodDefault || authenticationMethod == method)
    }

    public static func == (lhs: URLProtectionSpace, rhs: URLProtectionSpace) -> Bool {
        lhs.host == rhs.host && lhs.port == rhs.port && lhs.protocol == rhs.protocol && lhs.realm == rhs.realm
            && lhs.authenticationMethod == rhs.authenticationMethod
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(realm)
    }
}

/// A server's demand for credentials, or a question about a connection, as the delegate gets it.
public final class URLAuthenticationChallenge: Sendable {
    public let protectionSpace: URLProtectionSpace
    /// The session's default credential for the space, or the URL's, if any.
    public let proposedCredential: URLCredential?
    /// How many credentials the space already refused during this task.
    public let previousFailureCount: Int
    /// The `401` response.
    public let failureResponse: URLResponse?
    public var error: Error? { nil }
    /// Set by the protocol's default answer: the delegate does not implement the method.
    let answeredByDefault = Mutex(false)

    init(_ challenge: AuthenticationChallenge) {
        protectionSpace = URLProtectionSpace(challenge.protectionSpace)
        proposedCredential = challenge.proposedCredential.map { URLCredential(user: $0.user, password: $0.password, persistence: .none) }
        previousFailureCount = challenge.previousFailureCount
        failureResponse = HTTPURLResponse(challenge.failureResponse)
    }

    init(_ challenge: ConnectionChallenge) {
        protectionSpace = URLProtectionSpace(challenge.protectionSpace, serverTrust: challenge.serverTrust)
        proposedCredential = nil
        previousFailureCount = 0
        failureResponse = nil
    }
}

extension URLSession {
    /// What to do about an authentication challenge.
    public enum AuthChallengeDisposition: Int, Sendable {
        case useCredential = 0
        case performDefaultHandling = 1
        case cancelAuthenticationChallenge = 2
        case rejectProtectionSpace = 3
    }
}

extension ConnectionChallengeAnswer {
    /// The engine's answer for a delegate's disposition: `.useCredential` with an identity
    /// presents it on a client-certificate challenge; with `URLCredential(trust:)` of the
    /// challenge's own trust it trusts the server. Any other credential is default handling (a task
    /// delegate that answers every challenge with a password trusts no server by it).
    init(_ disposition: URLSession.AuthChallengeDisposition, _ credential: URLCredential?, challenge: ConnectionChallenge) {
        switch disposition {
        case .useCredential:
            if challenge.protectionSpace.method == .clientCertificate, let identity = credential?.identity {
                self = .useIdentity(identity)
            } else if challenge.protectionSpace.method == .serverTrust, let trust = credential?.trust, trust == challenge.serverTrust {
                self = .trustServer
            } else {
                self = .performDefaultHandling
            }
        case .performDefaultHandling: self = .performDefaultHandling
        case .cancelAuthenticationChallenge: self = .cancel
        case .rejectProtectionSpace: self = .rejectProtectionSpace
        }
    }
}

extension ChallengeAnswer {
    /// The engine's answer for a delegate's disposition (`.useCredential` without a credential is default handling).
    init(_ disposition: URLSession.AuthChallengeDisposition, _ credential: URLCredential?) {
        switch disposition {
        case .useCredential: self = credential?.credential.map { .useCredential($0) } ?? .performDefaultHandling
        case .performDefaultHandling: self = .performDefaultHandling
        case .cancelAuthenticationChallenge: self = .cancel
        case .rejectProtectionSpace: self = .rejectProtectionSpace
        }
    }
}
