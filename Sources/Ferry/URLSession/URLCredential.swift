public import FerryEngine
import Foundation
import Synchronization

/// URLSession's authentication types, for HTTP Basic and Digest. A `401` asks the task's
/// delegate (`urlSession(_:task:didReceive:completionHandler:)`); default handling uses the
/// session's ``URLCredentialStorage`` default for the protection space, then the URL's own
/// user and password, once.
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
        /// Kept for the process's life: Ferry has no keychain and never writes passwords to disk.
        case permanent = 2
        case synchronizable = 3
    }

    public let user: String?
    public let password: String?
    public let persistence: Persistence
    public var hasPassword: Bool { password != nil }

    public init(user: String, password: String, persistence: Persistence) {
        self.user = user
        self.password = password
        self.persistence = persistence
    }

    /// The engine's credential: kept in the session's storage once accepted unless `.none`.
    var credential: Credential? { user.map { Credential(user: $0, password: password ?? "", keep: persistence != .none) } }

    public static func == (lhs: URLCredential, rhs: URLCredential) -> Bool {
        lhs.user == rhs.user && lhs.password == rhs.password && lhs.persistence == rhs.persistence
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(user) }
}

/// `NSURLAuthenticationMethodHTTPBasic` and the others, as the platform names them.
public let NSURLAuthenticationMethodDefault = "NSURLAuthenticationMethodDefault"
public let NSURLAuthenticationMethodHTTPBasic = "NSURLAuthenticationMethodHTTPBasic"
public let NSURLAuthenticationMethodHTTPDigest = "NSURLAuthenticationMethodHTTPDigest"
/// Never asked on Ferry yet: server trust and client certificates are not delegate calls (docs/porting.md).
public let NSURLAuthenticationMethodServerTrust = "NSURLAuthenticationMethodServerTrust"
public let NSURLAuthenticationMethodClientCertificate = "NSURLAuthenticationMethodClientCertificate"

/// A realm on a server: host, port, protocol, realm and authentication method.
public final class URLProtectionSpace: Sendable, Hashable {
    public let host: String
    public let port: Int
    public let `protocol`: String?
    public let realm: String?
    public let authenticationMethod: String
    public var receivesCredentialSecurely: Bool { `protocol` == "https" || authenticationMethod == NSURLAuthenticationMethodHTTPDigest }

    public init(host: String, port: Int, protocol: String?, realm: String?, authenticationMethod: String?) {
        self.host = host.lowercased()
        self.port = port
        self.protocol = `protocol`?.lowercased()
        self.realm = realm
        self.authenticationMethod = authenticationMethod ?? NSURLAuthenticationMethodDefault
    }

    convenience init(_ space: ProtectionSpace) {
        self.init(
            host: space.host, port: space.port, protocol: space.scheme, realm: space.realm,
            authenticationMethod: space.method == .httpDigest ? NSURLAuthenticationMethodHTTPDigest : NSURLAuthenticationMethodHTTPBasic)
    }

    /// Whether a credential kept for this space answers `space` (the default method matches both).
    func covers(_ space: ProtectionSpace) -> Bool {
        let method = space.method == .httpDigest ? NSURLAuthenticationMethodHTTPDigest : NSURLAuthenticationMethodHTTPBasic
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

/// A server's demand for credentials, as the delegate gets it.
public final class URLAuthenticationChallenge: Sendable {
    public let protectionSpace: URLProtectionSpace
    /// The session's default credential for the space, or the URL's, if any.
    public let proposedCredential: URLCredential?
    /// How many credentials the space already refused during this task.
    public let previousFailureCount: Int
    /// The `401` response.
    public let failureResponse: URLResponse?
    public var error: Error? { nil }

    init(_ challenge: AuthenticationChallenge) {
        protectionSpace = URLProtectionSpace(challenge.protectionSpace)
        proposedCredential = challenge.proposedCredential.map { URLCredential(user: $0.user, password: $0.password, persistence: .none) }
        previousFailureCount = challenge.previousFailureCount
        failureResponse = HTTPURLResponse(challenge.failureResponse)
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

/// Credentials by protection space, in URLSession's spelling: `.default` and background
/// sessions use ``shared``, `.ephemeral` ones a storage of their own. Kept in memory only
/// (Ferry has no keychain and writes no passwords to disk), for the process's life.
///
/// ```swift
/// let space = URLProtectionSpace(host: "api.example.com", port: 443, protocol: "https", realm: "club",
///                                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
/// URLCredentialStorage.shared.setDefaultCredential(URLCredential(user: "alice", password: secret, persistence: .forSession), for: space)
/// ```
public final class URLCredentialStorage: Sendable, CredentialSource {
    private struct Entry {
        var space: URLProtectionSpace
        var credentials: [String: URLCredential]
        var defaultUser: String?
    }
    private let entries = Mutex<[URLProtectionSpace: Entry]>([:])

    /// A storage of its own (an `.ephemeral` session's).
    public init() {}

    public static let shared = URLCredentialStorage()

    public var allCredentials: [URLProtectionSpace: [String: URLCredential]] {
        entries.withLock { $0.mapValues(\.credentials) }
    }

    public func credentials(for space: URLProtectionSpace) -> [String: URLCredential]? {
        entries.withLock { $0[space]?.credentials }
    }

    /// Keeps `credential` for `space` (one per user); `.none` persistence is not kept.
    public func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard credential.persistence != .none, let user = credential.user else { return }
        entries.withLock { entries in
            entries[space, default: Entry(space: space, credentials: [:])].credentials[user] = credential
        }
    }

    public func remove(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard let user = credential.user else { return }
        entries.withLock { entries in
            entries[space]?.credentials[user] = nil
            if entries[space]?.defaultUser == user { entries[space]?.defaultUser = nil }
        }
    }

    public func defaultCredential(for space: URLProtectionSpace) -> URLCredential? {
        entries.withLock { entries in
            guard let entry = entries[space] else { return nil }
            return entry.defaultUser.flatMap { entry.credentials[$0] } ?? (entry.credentials.count == 1 ? entry.credentials.values.first : nil)
        }
    }

    public func setDefaultCredential(_ credential: URLCredential, for space: URLProtectionSpace) {
        set(credential, for: space)
        entries.withLock { $0[space]?.defaultUser = credential.user }
    }

    // MARK: For the engine

    public func defaultCredential(for space: ProtectionSpace) -> Credential? {
        let candidates = entries.withLock { $0.values.filter { $0.space.covers(space) }.map(\.space) }
        return candidates.lazy.compactMap { self.defaultCredential(for: $0)?.credential }.first
    }

    /// A credential the delegate gave (not `.none`) was accepted: kept as the space's default.
    public func credentialAccepted(_ credential: Credential, for space: ProtectionSpace) {
        setDefaultCredential(URLCredential(user: credential.user, password: credential.password, persistence: .forSession), for: URLProtectionSpace(space))
    }
}
