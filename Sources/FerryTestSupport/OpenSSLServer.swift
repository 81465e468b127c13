// `openssl s_server` as a TLS server that demands a client certificate strictly: without one
// it ends the handshake (TLS 1.2) or the connection (TLS 1.3) with an alert, where nginx answers
// with an HTTP 400. For the client-certificate error codes.
public import Foundation

/// `openssl s_server -Verify 1 -www` on a free `127.0.0.1` port: a client certificate issued
/// by `clientAuthority` is required; with one, every request gets s_server's status page.
///
/// ```swift
/// let server = try await OpenSSLServer.start(certificate: cert, key: key, clientAuthority: ca, tls: "1.3")
/// defer { server.stop() }
/// // https://127.0.0.1:\(server.port)/
/// ```
public final class OpenSSLServer: Sendable {
    public let port: Int
    private let process: SpawnedProcess

    private init(port: Int, process: SpawnedProcess) {
        self.port = port
        self.process = process
    }

    /// `tls`: "1.2" or "1.3", the only version offered. Waits (at most ~10 s) until it accepts.
    public static func start(certificate: String, key: String, clientAuthority: String, tls: String, log: URL? = nil) async throws -> OpenSSLServer {
        guard let openssl = findExecutable("openssl", in: ["/usr/bin", "/usr/local/bin"]) else {
            throw TestServerError("openssl is not installed: run scripts/install-deps")
        }
        let port = try freePort()
        let process = try SpawnedProcess.start(openssl, [
            "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-CAfile", clientAuthority,
            "-Verify", "1", "-www", "-quiet", tls == "1.2" ? "-tls1_2" : "-tls1_3",
        ], log: log)
        // Bounded: 200 polls of 50 ms.
        for _ in 0..<200 {
            if canConnect(port: port) { return OpenSSLServer(port: port, process: process) }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.kill()
        throw TestServerError("openssl s_server did not start on 127.0.0.1:\(port): \(process.output.suffix(500))")
    }

    public func stop() { process.kill() }
}
