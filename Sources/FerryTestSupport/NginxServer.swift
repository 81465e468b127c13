// Debian's nginx as a child process on loopback: static files, ranges, WebDAV PUT, and
// optionally TLS with HTTP/2, for tests and benchmarks against a server we did not write.
public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// nginx from the system (installed by `scripts/install-deps`), run in the foreground with a
/// private prefix directory, listening on a free `127.0.0.1` port.
///
/// Files under `root` are served at `/`; `/upload/` takes `PUT` and `DELETE` (WebDAV, no
/// body size limit) into `root/upload/`. The access log has one line per request:
/// `$request $status "$http_range" "$http_if_range" $bytes_sent`.
///
/// ```swift
/// let nginx = try await NginxServer.start()
/// try Data(TestContent.bytes(count: 1000, seed: 1)).write(to: nginx.root.appending(path: "a.bin"))
/// // GET nginx.baseURL + "/a.bin", PUT nginx.baseURL + "/upload/b.bin"
/// #expect(nginx.accessLog().last?.hasPrefix("GET /a.bin HTTP/1.1 200") == true)
/// try await nginx.stop()
/// ```
public final class NginxServer: Sendable {
    /// The plain-HTTP port.
    public let port: Int
    /// The TLS port (HTTP/2 and HTTP/1.1 by ALPN) when started with `tls: true`.
    public let httpsPort: Int?
    /// The prefix directory holding the config, logs and temp files (removed by `stop()`).
    public let prefix: URL
    /// The document root, served at `/`.
    public let root: URL
    /// The PEM certificate (self-signed, its own CA) to trust for `httpsBaseURL`.
    public let caCertificatePEMPath: String?
    /// The TLS port that asks every client for a certificate issued by ``clientIdentity``'s
    /// authority (`ssl_verify_client on`) when started with `mutualTLS: true`. Every path
    /// answers `200` with the certificate's subject; a client without one gets nginx's `400`.
    public let mutualTLSPort: Int?
    /// The client certificate `mutualTLSPort` accepts.
    public let clientIdentity: TestClientIdentity?
    private let process: Mutex<Process?>

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// `https://127.0.0.1:TLSPORT` when started with `tls: true`.
    public var httpsBaseURL: String? { httpsPort.map { "https://127.0.0.1:\($0)" } }
    /// `https://127.0.0.1:MTLSPORT` when started with `mutualTLS: true`.
    public var mutualTLSBaseURL: String? { mutualTLSPort.map { "https://127.0.0.1:\($0)" } }
    /// Where `PUT /upload/<path>` stores files: `root/upload`.
    public var uploadDirectory: URL { root.appendingPathComponent("upload", isDirectory: true) }

    private init(port: Int, httpsPort: Int?, mutualTLSPort: Int?, clientIdentity: TestClientIdentity?, prefix: URL, cert: String?, process: Process) {
        self.port = port
        self.httpsPort = httpsPort
        self.mutualTLSPort = mutualTLSPort
        self.clientIdentity = clientIdentity
        self.prefix = prefix
        self.root = prefix.appendingPathComponent("html", isDirectory: true)
        self.caCertificatePEMPath = cert
        self.process = Mutex(process)
    }

    /// Starts nginx; with `tls`, also a TLS listener (self-signed certificate made by
    /// `openssl` now) that speaks HTTP/2; with `mutualTLS`, also one that asks for a client
    /// certificate (``mutualTLSPort``). Waits (at most ~10 s) until the ports accept.
    ///
    /// ```swift
    /// let nginx = try await NginxServer.start(tls: true)
    /// // curl --cacert \(nginx.caCertificatePEMPath!) \(nginx.httpsBaseURL!)/file
    /// ```
    public static func start(tls: Bool = false, mutualTLS: Bool = false) async throws -> NginxServer {
        let tls = tls || mutualTLS
        guard let nginx = findExecutable("nginx", in: ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"])
        else {
            throw TestServerError("nginx is not installed: run scripts/install-deps (Debian package nginx-light)")
        }
        let fm = FileManager.default
        let prefix = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("ferry-nginx-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", isDirectory: true)
        for sub in ["html/upload", "logs", "temp"] {
            try fm.createDirectory(at: prefix.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        if getuid() == 0 {
            // Workers run as root too, so they can read and write the private prefix.
            try? fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: prefix.path)
        }
        var cert: String?
        if tls { cert = try makeCertificate(in: prefix) }
        let clientIdentity = mutualTLS ? try TestClientIdentity.make(in: prefix) : nil

        var lastError = ""
        // Bounded: a port can be taken between choosing and binding it; try a few.
        for _ in 0..<3 {
            let port = try freePort()
            let tlsPort = tls ? try freePort() : nil
            let mutualPort = mutualTLS ? try freePort() : nil
            let config = configuration(prefix: prefix.path, port: port, tlsPort: tlsPort, mutualTLSPort: mutualPort, clientAuthority: clientIdentity?.authorityPEM)
            try config.write(to: prefix.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = [
                "-p", prefix.path + "/", "-c", "nginx.conf", "-e", prefix.path + "/logs/error.log",
                "-g", "daemon off; pid \(prefix.path)/nginx.pid;",
            ]
            let stderrURL = prefix.appendingPathComponent("logs/stderr.log")
            _ = fm.createFile(atPath: stderrURL.path, contents: nil)
            let stderrHandle = try FileHandle(forWritingTo: stderrURL)
            process.standardOutput = stderrHandle
            process.standardError = stderrHandle
            process.standardInput = FileHandle.nullDevice
            try process.run()
            try? stderrHandle.close()
            // Bounded wait: 200 polls of 50 ms.
            for _ in 0..<200 {
                if !process.isRunning { break }
                if canConnect(port: port) && (tlsPort.map(canConnect(port:)) ?? true) && (mutualPort.map(canConnect(port:)) ?? true) {
                    return NginxServer(
                        port: port, httpsPort: tlsPort, mutualTLSPort: mutualPort, clientIdentity: clientIdentity, prefix: prefix, cert: cert, process: process)
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let logs = ["logs/error.log", "logs/stderr.log"].compactMap {
                try? String(contentsOf: prefix.appendingPathComponent($0), encoding: .utf8)
            }
            lastError = logs.joined(separator: "\n")
        }
        try? fm.removeItem(at: prefix)
        throw TestServerError("nginx did not start on 127.0.0.1:\n\(lastError)")
    }

    /// Starts nginx for `body` and stops it afterwards, whatever happens.
    public static func running<T>(tls: Bool = false, mutualTLS: Bool = false, _ body: (NginxServer) async throws -> T) async throws -> T {
        let nginx = try await start(tls: tls, mutualTLS: mutualTLS)
        do {
            let value = try await body(nginx)
            try await nginx.stop()
            return value
        } catch {
            try? await nginx.stop()
            throw error
        }
    }

    /// Sends SIGTERM, waits (at most 5 s), then SIGKILL; removes the prefix directory.
    public func stop() async throws {
        let process = self.process.withLock { p -> Process? in defer { p = nil }; return p }
        if let process {
            if process.isRunning { process.terminate() }
            // Bounded: 100 polls of 50 ms.
            for _ in 0..<100 where process.isRunning {
                try? await Task.sleep(for: .milliseconds(50))
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: prefix)
    }

    /// The lines of the access log so far: `$request $status "$http_range" "$http_if_range" $bytes_sent`,
    /// e.g. `GET /a.bin HTTP/1.1 206 "bytes=100-" "\"etag\"" 1234`.
    public func accessLog() -> [String] {
        logLines("access.log").map(String.init)
    }

    /// The connection (nginx's serial number) each request so far came on, with the request:
    /// `(connection, "GET /a.bin HTTP/1.1")`, in the order they were answered.
    public func connectionLog() -> [(connection: Int, request: String)] {
        logLines("connections.log").compactMap { line in
            guard let space = line.firstIndex(of: " "), let connection = Int(line[..<space]) else { return nil }
            return (connection, String(line[line.index(after: space)...]))
        }
    }

    /// The lines of the log file `name` so far (none before nginx wrote it).
    private func logLines(_ name: String) -> [Substring] {
        let url = prefix.appendingPathComponent("logs/" + name)
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n")
    }

    /// The error log so far, for diagnosing a failing test.
    public func errorLog() -> String {
        (try? String(contentsOf: prefix.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
    }

    static func configuration(prefix: String, port: Int, tlsPort: Int?, mutualTLSPort: Int? = nil, clientAuthority: String? = nil) -> String {
        let user = getuid() == 0 ? "user root root;\n" : ""
        var mutualServer = ""
        if let mutualTLSPort, let clientAuthority {
            mutualServer = """
                    server {
                        listen 127.0.0.1:\(mutualTLSPort) ssl;
                        ssl_certificate \(prefix)/cert.pem;
                        ssl_certificate_key \(prefix)/key.pem;
                        ssl_protocols TLSv1.2 TLSv1.3;
                        ssl_client_certificate \(clientAuthority);
                        ssl_verify_client on;
                        default_type text/plain;
                        location / { return 200 "$ssl_client_s_dn\\n"; }
                    }

            """
        }
        var tlsServer = ""
        if let tlsPort {
            tlsServer = """
                    listen 127.0.0.1:\(tlsPort) ssl http2;
                    ssl_certificate \(prefix)/cert.pem;
                    ssl_certificate_key \(prefix)/key.pem;
                    ssl_protocols TLSv1.2 TLSv1.3;

                """
        }
        return """
            \(user)worker_processes 2;
            error_log \(prefix)/logs/error.log warn;
            events { worker_connections 1024; }
            http {
                types { application/octet-stream bin; text/plain txt; text/html html; application/json json; }
                default_type application/octet-stream;
                sendfile on;
                tcp_nopush on;
                keepalive_requests 100000;
                keepalive_timeout 65;
                log_format ferry '$request $status "$http_range" "$http_if_range" $bytes_sent';
                access_log \(prefix)/logs/access.log ferry;
                log_format connections '$connection $request';
                access_log \(prefix)/logs/connections.log connections;
                client_body_temp_path \(prefix)/temp/body;
                proxy_temp_path \(prefix)/temp/proxy;
                fastcgi_temp_path \(prefix)/temp/fastcgi;
                uwsgi_temp_path \(prefix)/temp/uwsgi;
                scgi_temp_path \(prefix)/temp/scgi;
                server {
                    listen 127.0.0.1:\(port);
            \(tlsServer)        server_name localhost;
                    root \(prefix)/html;
                    # Text under /gzip/ comes gzip-coded to clients that accept it.
                    location /gzip/ {
                        gzip on;
                        gzip_types text/plain application/json;
                        gzip_min_length 1;
                    }
                    # Files under /slow/ are sent at 8 MB/s a request: transfers that last.
                    location /slow/ {
                        limit_rate 8m;
                    }
                    location /upload/ {
                        dav_methods PUT DELETE;
                        create_full_put_path on;
                        dav_access user:rw group:r all:r;
                        client_max_body_size 0;
                    }
                }
            \(mutualServer)}

            """
    }

    private static func makeCertificate(in prefix: URL) throws -> String {
        try runOpenSSL([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", prefix.path + "/key.pem", "-out", prefix.path + "/cert.pem",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ])
        return prefix.path + "/cert.pem"
    }
}

/// The first executable `name` in `dirs` or on `PATH`.
func findExecutable(_ name: String, in dirs: [String]) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").map(String.init) ?? []
    for dir in dirs + path where access(dir + "/" + name, X_OK) == 0 {
        return dir + "/" + name
    }
    return nil
}

/// A port on 127.0.0.1 that was free a moment ago.
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestServerError("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var addr = loopback(port: 0)
    let bound = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw TestServerError("bind(127.0.0.1:0) failed: errno \(errno)") }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// Whether a TCP connection to 127.0.0.1:`port` succeeds now.
func canConnect(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var addr = loopback(port: port)
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

private func loopback(port: Int) -> sockaddr_in {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = UInt16(port).bigEndian
    addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return addr
}
