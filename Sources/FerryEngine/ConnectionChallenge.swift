public import FerryCore
public import Foundation

/// A question about a TLS connection rather than a request: is the server's certificate to be
/// trusted (``ServerTrust``), and which certificate does the client present when the server
/// asks for one. A transfer's ``Transfer/connectionChallenges`` answers them for a whole
/// session, as URLSession's session-level `urlSession(_:didReceive:completionHandler:)` does.
///
/// ```swift
/// final class Pinning: ConnectionChallengeHandler {
///     let evaluatesServerTrust = true
///     func connectionDidReceive(challenge: ConnectionChallenge, from observer: (any TransferObserver)?) async -> ConnectionChallengeAnswer {
///         guard let trust = challenge.serverTrust else { return .performDefaultHandling }
///         return trust.publicKeySHA256.contains(pin) ? .performDefaultHandling : .cancel
///     }
/// }
/// ```
public struct ConnectionChallenge: Sendable {
    /// The host and port; its method is ``AuthenticationMethod/serverTrust`` or ``AuthenticationMethod/clientCertificate``.
    public var protectionSpace: ProtectionSpace
    /// The server's certificates and how the standard rules judged them (server trust only).
    public var serverTrust: ServerTrust?

    public init(protectionSpace: ProtectionSpace, serverTrust: ServerTrust? = nil) {
        self.protectionSpace = protectionSpace
        self.serverTrust = serverTrust
    }
}

/// What to do about a ``ConnectionChallenge``.
public enum ConnectionChallengeAnswer: Sendable {
    /// Server trust: accept the chain the challenge showed, even if the standard rules did not.
    case trustServer
    /// Client certificate: present this identity.
    case useIdentity(ClientIdentity)
    /// Server trust: the standard rules decide. Client certificate: the session's own
    /// identity, if it has one.
    case performDefaultHandling
    /// Fail the tasks that need this connection with `cancelled`, URLSession's code for it.
    case cancel
    /// Server trust: as ``cancel``. Client certificate: as ``performDefaultHandling``.
    case rejectProtectionSpace
}

/// Answers a session's connection-level challenges (Ferry's `Session` makes one from its delegate).
public protocol ConnectionChallengeHandler: AnyObject, Sendable {
    /// Whether each HTTPS host's certificate is shown to ``connectionDidReceive(challenge:from:)``
    /// before the session's first request to it. It costs a TLS handshake of its own per host.
    var evaluatesServerTrust: Bool { get }
    /// `observer` is the transfer whose request raised the question (server trust), or nil
    /// when no one transfer did (a connection asked for a client certificate).
    func connectionDidReceive(challenge: ConnectionChallenge, from observer: (any TransferObserver)?) async -> ConnectionChallengeAnswer
}

/// A server's certificate chain as it presented it, with the standard verdict: what a
/// server-trust challenge shows (URLSession's `SecTrust`).
///
/// ```swift
/// let pinned = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
/// let ok = trust.isTrustedByDefault && trust.publicKeySHA256.contains(pinned)
/// ```
public struct ServerTrust: Hashable, Sendable {
    public var host: String
    public var port: Int
    /// The certificates in DER, leaf first, as the server sent them.
    public var certificates: [Data]
    /// The SHA-256 of each certificate's public key (its DER `SubjectPublicKeyInfo`), base64:
    /// the form of HTTP public-key pins.
    public var publicKeySHA256: [String]
    /// Whether the chain passed the standard rules: a trusted authority (the system's, plus
    /// the session's `additionalTrustedCertificateFiles`), validity dates, the host's name.
    public var isTrustedByDefault: Bool
    /// Why it did not, when it did not.
    public var defaultFailure: String?

    public init(host: String, port: Int, certificates: [Data], publicKeySHA256: [String], isTrustedByDefault: Bool, defaultFailure: String?) {
        self.host = host
        self.port = port
        self.certificates = certificates
        self.publicKeySHA256 = publicKeySHA256
        self.isTrustedByDefault = isTrustedByDefault
        self.defaultFailure = defaultFailure
    }
}
