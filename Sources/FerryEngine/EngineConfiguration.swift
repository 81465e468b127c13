public import FerryCore
public import Foundation

/// Settings shared by every transfer of one ``TransferEngine`` (one connection pool).
public struct EngineConfiguration: Sendable, Hashable {
    /// Idle time-out: a transfer fails with `timedOut` when no byte moves for this long.
    public var idleTimeout: TimeInterval = 60
    /// Requests in flight to one host at most (and so connections to it).
    public var maximumConnectionsPerHost: Int = 6
    /// Redirects followed for one request at most.
    public var maximumRedirects: Int = 16
    /// `true` offers HTTP/2 through ALPN on HTTPS; `false` speaks HTTP/1.1 only.
    public var allowsHTTP2: Bool = true
    /// PEM files of certificate authorities to trust besides the system's store.
    public var additionalTrustedCertificateFiles: [String] = []
    /// The certificate and key presented to servers that ask for one.
    public var clientIdentity: ClientIdentity?
    /// Resumable-upload interop versions offered, newest first. The probe starts with the
    /// first; a server that names another one from this list is answered in it.
    public var resumableUploadVersions: [Int] = [8, 6, 5, 3]
    /// How long an idle pooled connection is kept.
    public var connectionIdleTimeout: TimeInterval = 60
    /// An idempotent request whose connection closed before any response (most often a
    /// pooled keep-alive connection the server had just closed) is sent once more at once,
    /// outside the retry policy, as URLSession does. ferryd turns this off: its own retries
    /// (backoff, counted attempts) cover it.
    public var resendsWhenClosedBeforeResponse = true

    public init() {}
}
