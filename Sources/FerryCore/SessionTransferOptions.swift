/// What a background session's configuration says about how its transfers are made, carried
/// to ferryd with ``NetworkAccess`` when its owner attaches, so that a task runs in ferryd as
/// it would in the app: the extra certificate authorities, HTTP/2, resumable uploads, proxies,
/// the client certificate.
///
/// ```swift
/// var options = SessionTransferOptions()
/// options.additionalTrustedCertificateFiles = ["/etc/example/ca.pem"]   // a private CA
/// options.allowsHTTP2 = false
/// ```
public struct SessionTransferOptions: Hashable, Sendable, Codable {
    /// PEM files (absolute paths, readable by the user's ferryd) of authorities to trust
    /// besides the system's: the configuration's `additionalTrustedCertificateFiles`.
    public var additionalTrustedCertificateFiles: [String]
    /// Offer HTTP/2 on HTTPS (the configuration's `allowsHTTP2`); false: HTTP/1.1 only.
    public var allowsHTTP2: Bool
    /// Use the resumable-upload protocol when the server speaks it (the configuration's
    /// `resumableUploads` is `.automatic`); false: plain uploads.
    public var usesResumableUploads: Bool
    /// The proxies the app's configuration resolved (its own, or its environment's); nil: direct.
    /// A proxy password is kept in ferryd's store with the session.
    public var proxies: ProxySettings?
    /// The certificate and key presented when a server asks for one (absolute paths, readable
    /// by the user's ferryd); its passphrase is kept in ferryd's store with the session.
    public var clientIdentity: ClientIdentity?

    public init(
        additionalTrustedCertificateFiles: [String] = [], allowsHTTP2: Bool = true, usesResumableUploads: Bool = true,
        proxies: ProxySettings? = nil, clientIdentity: ClientIdentity? = nil
    ) {
        self.additionalTrustedCertificateFiles = additionalTrustedCertificateFiles
        self.allowsHTTP2 = allowsHTTP2
        self.usesResumableUploads = usesResumableUploads
        self.proxies = proxies
        self.clientIdentity = clientIdentity
    }

    /// What a session that never said otherwise gets.
    public static let standard = SessionTransferOptions()

    // Fields a peer leaves out keep their defaults, so a newer ferryd reads an older client.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        additionalTrustedCertificateFiles = try container.decodeIfPresent([String].self, forKey: .additionalTrustedCertificateFiles) ?? []
        allowsHTTP2 = try container.decodeIfPresent(Bool.self, forKey: .allowsHTTP2) ?? true
        usesResumableUploads = try container.decodeIfPresent(Bool.self, forKey: .usesResumableUploads) ?? true
        proxies = try container.decodeIfPresent(ProxySettings.self, forKey: .proxies)
        clientIdentity = try container.decodeIfPresent(ClientIdentity.self, forKey: .clientIdentity)
    }
}
