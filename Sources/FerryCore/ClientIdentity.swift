/// A client certificate and its private key, presented when a server asks for one during the
/// TLS handshake (mutual TLS). It names files, so that ferryd can read them for a background
/// session as the app would: PEM files (the certificate chain, leaf first, and the key) or one
/// PKCS#12 bundle.
///
/// ```swift
/// var configuration = Configuration.default
/// configuration.clientIdentity = .pkcs12(file: "/home/me/.config/photos/me.p12", passphrase: "s3cret")
/// // or: .pem(certificateChain: "/etc/photos/client.pem", privateKey: "/etc/photos/client.key")
/// ```
///
/// The passphrase is kept in memory, and, for a background session, in ferryd's store with
/// the session (readable by this user only), as a proxy password is.
public struct ClientIdentity: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Where the certificate and key are.
    public enum Source: Hashable, Sendable, Codable {
        /// A PEM file of the certificate chain (leaf first) and a PEM file of its private key
        /// (unencrypted, or encrypted with ``ClientIdentity/passphrase``).
        case pem(certificateChain: String, privateKey: String)
        /// A PKCS#12 (`.p12`, `.pfx`) bundle holding both, opened with ``ClientIdentity/passphrase``.
        case pkcs12(file: String)
    }

    public var source: Source
    /// The passphrase of the key or the bundle; nil: none.
    public var passphrase: String?

    public init(source: Source, passphrase: String? = nil) {
        self.source = source
        self.passphrase = passphrase
    }

    /// A PEM certificate chain and private key.
    public static func pem(certificateChain: String, privateKey: String, passphrase: String? = nil) -> ClientIdentity {
        ClientIdentity(source: .pem(certificateChain: certificateChain, privateKey: privateKey), passphrase: passphrase)
    }

    /// A PKCS#12 bundle.
    public static func pkcs12(file: String, passphrase: String? = nil) -> ClientIdentity {
        ClientIdentity(source: .pkcs12(file: file), passphrase: passphrase)
    }

    /// The files it reads.
    public var files: [String] {
        switch source {
        case .pem(let chain, let key): [chain, key]
        case .pkcs12(let file): [file]
        }
    }

    /// The same identity with its paths made absolute against `folder` (ferryd runs elsewhere).
    public func absolute(relativeTo folder: String) -> ClientIdentity {
        func absolute(_ path: String) -> String {
            path.hasPrefix("/") ? path : (folder.hasSuffix("/") ? folder : folder + "/") + path
        }
        var copy = self
        switch source {
        case .pem(let chain, let key): copy.source = .pem(certificateChain: absolute(chain), privateKey: absolute(key))
        case .pkcs12(let file): copy.source = .pkcs12(file: absolute(file))
        }
        return copy
    }

    /// The files, never the passphrase: what logs and errors may show.
    public var description: String {
        "client identity (\(files.joined(separator: ", "))\(passphrase == nil ? "" : ", with a passphrase"))"
    }
}
