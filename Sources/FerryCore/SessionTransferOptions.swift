/// What a background session's configuration says about how its transfers are made, carried
/// to ferryd with ``NetworkAccess`` when its owner attaches, so that a task runs in ferryd as
/// it would in the app. Today: the extra certificate authorities.
///
/// ```swift
/// var options = SessionTransferOptions()
/// options.additionalTrustedCertificateFiles = ["/etc/example/ca.pem"]   // a private CA
/// ```
public struct SessionTransferOptions: Hashable, Sendable, Codable {
    /// PEM files (absolute paths, readable by the user's ferryd) of authorities to trust
    /// besides the system's: the configuration's `additionalTrustedCertificateFiles`.
    public var additionalTrustedCertificateFiles: [String]

    public init(additionalTrustedCertificateFiles: [String] = []) {
        self.additionalTrustedCertificateFiles = additionalTrustedCertificateFiles
    }

    /// What a session that never said otherwise gets.
    public static let standard = SessionTransferOptions()

    // Fields a peer leaves out keep their defaults, so a newer ferryd reads an older client.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        additionalTrustedCertificateFiles = try container.decodeIfPresent([String].self, forKey: .additionalTrustedCertificateFiles) ?? []
    }
}
