// Debian's tinyproxy as a child process on loopback: an HTTP proxy we did not write, for the
// proxy tests.
public import Foundation

/// tinyproxy (installed by `scripts/install-deps`) in the foreground with a private
/// configuration, listening on a free `127.0.0.1` port, logging every request.
///
/// ```swift
/// let proxy = try await TinyproxyServer.start(user: "p", password: "secret")
/// // configuration.proxies = ProxySettings(http: .init(host: "127.0.0.1", port: proxy.port, user: "p", password: "secret"))
/// #expect(proxy.log().contains("CONNECT 127.0.0.1:8080"))
/// proxy.stop()
/// ```
public final class TinyproxyServer: Sendable {
    public let port: Int
    /// Its configuration and log (removed by `stop()`).
    public let directory: URL
    private let process: SpawnedProcess

    private init(port: Int, directory: URL, process: SpawnedProcess) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Starts tinyproxy; with `user`, it asks for that Basic credential (`407` without it).
    /// Waits (at most ~10 s) until the port accepts.
    public static func start(user: String? = nil, password: String? = nil) async throws -> TinyproxyServer {
        guard let tinyproxy = findExecutable("tinyproxy", in: ["/usr/bin", "/usr/sbin", "/usr/local/bin"]) else {
            throw TestServerError("tinyproxy is not installed: run scripts/install-deps (Debian package tinyproxy)")
        }
        let directory = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("ferry-tinyproxy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if getuid() == 0 { try? FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path) }
        var lastOutput = ""
        // Bounded: a port can be taken between choosing and binding it; try a few.
        for _ in 0..<3 {
            let port = try freePort()
            var lines = [
                "Port \(port)", "Listen 127.0.0.1", "Timeout 30", "MaxClients 50", "Allow 127.0.0.1",
                "LogFile \"\(directory.path)/tinyproxy.log\"", "LogLevel Info", "DisableViaHeader Yes",
            ]
            if getuid() == 0 { lines += ["User nobody", "Group nogroup"] }
            if let user { lines.append("BasicAuth \(user) \(password ?? "")") }
            let config = directory.appendingPathComponent("tinyproxy.conf")
            try (lines.joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
            let process = try SpawnedProcess.start(tinyproxy, ["-d", "-c", config.path], log: directory.appendingPathComponent("stderr.log"))
            // Bounded wait: 200 polls of 50 ms.
            for _ in 0..<200 {
                if !process.isRunning { break }
                if canConnect(port: port) { return TinyproxyServer(port: port, directory: directory, process: process) }
                try await Task.sleep(for: .milliseconds(50))
            }
            process.kill()
            lastOutput = process.output
        }
        try? FileManager.default.removeItem(at: directory)
        throw TestServerError("tinyproxy did not start on 127.0.0.1:\n\(lastOutput)")
    }

    /// What tinyproxy logged so far (one line per connection and request).
    public func log() -> String {
        (try? String(contentsOf: directory.appendingPathComponent("tinyproxy.log"), encoding: .utf8)) ?? ""
    }

    public func stop() {
        process.kill()
        try? FileManager.default.removeItem(at: directory)
    }
}
