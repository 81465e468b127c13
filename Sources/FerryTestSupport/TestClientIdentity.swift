// Client certificates for mutual-TLS tests, made by openssl in a folder of the test's.
public import Foundation

/// An authority that issues client certificates, and one certificate it issued
/// (`CN=ferry-client`): as PEM files (the key plain and encrypted) and as a PKCS#12 bundle,
/// both encrypted with ``passphrase``.
///
/// ```swift
/// let identity = try TestClientIdentity.make(in: folder)
/// // nginx: ssl_client_certificate \(identity.authorityPEM); ssl_verify_client on;
/// // client: .pkcs12(file: identity.pkcs12, passphrase: identity.passphrase)
/// ```
public struct TestClientIdentity: Sendable {
    /// The issuing authority's certificate: what the server trusts.
    public let authorityPEM: String
    public let certificatePEM: String
    public let keyPEM: String
    /// The same key, encrypted (AES-256) with ``passphrase``.
    public let encryptedKeyPEM: String
    public let pkcs12: String
    public let passphrase = "ferry-test"
    /// The certificate's subject as nginx's `$ssl_client_s_dn` gives it.
    public let subject = "CN=ferry-client"

    /// Makes the authority, the certificate and its forms in `folder` (which must exist).
    public static func make(in folder: URL) throws -> TestClientIdentity {
        let path = { (name: String) in folder.appendingPathComponent(name).path }
        let identity = TestClientIdentity(
            authorityPEM: path("client-ca.pem"), certificatePEM: path("client.pem"), keyPEM: path("client.key"),
            encryptedKeyPEM: path("client-encrypted.key"), pkcs12: path("client.p12"))
        let pass = "pass:\(identity.passphrase)"
        try runOpenSSL(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout", path("client-ca.key"),
                     "-out", identity.authorityPEM, "-subj", "/CN=Ferry Test Client Authority"])
        try runOpenSSL(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", identity.keyPEM, "-out", path("client.csr"), "-subj", "/CN=ferry-client"])
        try runOpenSSL(["x509", "-req", "-in", path("client.csr"), "-CA", identity.authorityPEM, "-CAkey", path("client-ca.key"),
                     "-CAcreateserial", "-days", "2", "-out", identity.certificatePEM])
        try runOpenSSL(["pkey", "-in", identity.keyPEM, "-aes256", "-passout", pass, "-out", identity.encryptedKeyPEM])
        try runOpenSSL(["pkcs12", "-export", "-inkey", identity.keyPEM, "-in", identity.certificatePEM, "-out", identity.pkcs12, "-passout", pass])
        return identity
    }
}

/// Runs `openssl` with `arguments`; its output is dropped, a failure throws.
func runOpenSSL(_ arguments: [String]) throws {
    guard let openssl = findExecutable("openssl", in: ["/usr/bin", "/usr/local/bin"]) else {
        throw TestServerError("openssl is not installed: run scripts/install-deps")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: openssl)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw TestServerError("openssl \(arguments.first ?? "") failed (status \(process.terminationStatus))")
    }
}
