public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Two network namespaces made for one test and joined by a veth pair: `client` (where ferryd
/// runs) at 10.200.0.2 and `server` at 10.200.0.1, with a web server (Python's `http.server`
/// with byte ranges, serving ``root``) listening on every address of `server`, among them ``farHost``
/// (10.201.0.1), which the client reaches only through its default route. The test takes the
/// link down and up and removes the default route; ``remove()`` deletes both namespaces
/// (and with them the veth pair). Needs root and iproute2 (`scripts/install-deps`).
///
/// ```swift
/// let lab = try NetworkLab.make()
/// defer { lab.remove() }
/// try lab.startServer()
/// try lab.setLink(up: false)
/// // … submit a download of lab.url("/file.bin") to a ferryd started with lab.inClient([ferryd]) …
/// try lab.setLink(up: true)
/// ```
public final class NetworkLab: Sendable {
    public let client: String
    public let server: String
    /// The client end of the veth pair (in `client`).
    public let clientLink: String
    /// The server end of the veth pair (in `server`).
    public let serverLink: String
    public let root: URL
    public static let nearHost = "10.200.0.1"
    public static let farHost = "10.201.0.1"
    public static let port = 8080
    private let serverProcess = LockedProcess()

    private init(tag: String, root: URL) {
        client = "ferry-\(tag)-c"
        server = "ferry-\(tag)-s"
        clientLink = "fc\(tag)"
        serverLink = "fs\(tag)"
        self.root = root
    }

    /// Makes the namespaces, the link, the addresses and the client's default route; removes
    /// what earlier runs of dead test processes left.
    public static func make() throws -> NetworkLab {
        sweepLeftovers()
        let tag = "\(getpid())x\(UInt16.random(in: 0...0xfff))"
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-netlab-\(tag)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("www"), withIntermediateDirectories: true)
        let lab = NetworkLab(tag: tag, root: root)
        do {
            try ip("netns", "add", lab.client)
            try ip("netns", "add", lab.server)
            try ip("link", "add", lab.clientLink, "type", "veth", "peer", "name", lab.serverLink)
            try ip("link", "set", lab.clientLink, "netns", lab.client)
            try ip("link", "set", lab.serverLink, "netns", lab.server)
            try ip("-n", lab.server, "link", "set", "lo", "up")
            try ip("-n", lab.server, "address", "add", "\(farHost)/32", "dev", "lo")
            try ip("-n", lab.server, "address", "add", "\(nearHost)/24", "dev", lab.serverLink)
            try ip("-n", lab.server, "link", "set", lab.serverLink, "up")
            try ip("-n", lab.client, "link", "set", "lo", "up")
            try ip("-n", lab.client, "address", "add", "10.200.0.2/24", "dev", lab.clientLink)
            try lab.setLink(up: true)
        } catch {
            lab.remove()
            throw error
        }
        return lab
    }

    /// The web server's URL for `path` on ``farHost`` (or `host`).
    public func url(_ path: String, host: String = farHost) -> String { "http://\(host):\(Self.port)\(path)" }

    /// The served folder.
    public var www: URL { root.appendingPathComponent("www") }

    /// `command` run inside the client namespace (`ip netns exec`): prefix it to ferryd's.
    public func inClient(_ command: [String]) -> [String] { [Self.ipPath, "netns", "exec", client] + command }

    /// Brings the client's link up (with its default route) or down (the kernel drops its routes).
    public func setLink(up: Bool) throws {
        try Self.ip("-n", client, "link", "set", clientLink, up ? "up" : "down")
        if up { try setDefaultRoute(present: true) }
    }

    /// Sends the server's answers at most `bytesPerSecond` (a token bucket on its end of the
    /// link), so that a transfer is still under way when a test changes the network.
    public func limitServerRate(bytesPerSecond: Int) throws {
        try Self.ip("netns", "exec", server, "tc", "qdisc", "replace", "dev", serverLink, "root", "tbf",
                    "rate", "\(bytesPerSecond * 8)bit", "burst", "32kbit", "latency", "1s")
    }

    public func setDefaultRoute(present: Bool) throws {
        if present {
            try Self.ip("-n", client, "route", "replace", "default", "via", Self.nearHost, "dev", clientLink)
        } else {
            try Self.ip("-n", client, "route", "del", "default")
        }
    }

    /// Python's file server, taught one `Range` (`bytes=N-` or `bytes=N-M`: a `206`, so that a
    /// download interrupted by the network is seen to resume), each request line logged with
    /// the range it asked for (`"GET /a.bin HTTP/1.1" 206 - range=bytes=100-`).
    static let serverScript = #"""
        import http.server, os, re, sys
        class Handler(http.server.SimpleHTTPRequestHandler):
            range_left = None
            def send_head(self):
                asked = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
                path = self.translate_path(self.path)
                if not asked or not os.path.isfile(path):
                    return super().send_head()
                size = os.path.getsize(path)
                start = int(asked.group(1))
                end = min(int(asked.group(2)), size - 1) if asked.group(2) else size - 1
                if start > end:
                    self.send_error(416)
                    return None
                body = open(path, "rb")
                body.seek(start)
                self.send_response(206)
                self.send_header("Content-Type", self.guess_type(path))
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
                self.send_header("Content-Length", str(end - start + 1))
                self.send_header("Last-Modified", self.date_time_string(int(os.path.getmtime(path))))
                self.end_headers()
                self.range_left = end - start + 1
                return body
            def copyfile(self, source, destination):
                if self.range_left is None:
                    return super().copyfile(source, destination)
                while self.range_left > 0:
                    chunk = source.read(min(65536, self.range_left))
                    if not chunk:
                        break
                    destination.write(chunk)
                    self.range_left -= len(chunk)
            def log_request(self, code="-", size="-"):
                code = getattr(code, "value", code)
                asked = self.headers.get("Range")
                self.log_message('"%s" %s %s%s', self.requestline, code, size, " range=" + asked if asked else "")
        os.chdir(sys.argv[2])
        server = http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Handler)
        print("Serving HTTP on 0.0.0.0 port %s" % sys.argv[1], flush=True)
        server.serve_forever()
        """#

    /// Starts the web server in the server namespace and waits (≤ 10 s) until it answers there.
    public func startServer() async throws {
        let script = root.appendingPathComponent("server.py")
        try Data(Self.serverScript.utf8).write(to: script)
        let process = try SpawnedProcess.start(
            Self.ipPath, ["netns", "exec", server, "python3", "-u", script.path, "\(Self.port)", www.path],
            log: serverLog)
        serverProcess.set(process)
        try await poll(until: "the lab's web server to listen on port \(Self.port)", timeout: .seconds(10), every: .milliseconds(50),
                       observed: "its output: \(process.output)") {
            guard process.exitStatus == nil else { throw SpawnError(message: "the lab's web server exited: \(process.output)") }
            return process.output.contains("Serving HTTP")
        }
    }

    public var serverLog: URL { root.appendingPathComponent("server.log") }

    /// The request lines the web server logged so far (`"GET /file.bin HTTP/1.1" 200`).
    public var requests: [String] {
        ((try? String(contentsOf: serverLog, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains("\"GET ") }.map(String.init)
    }

    public func remove() {
        serverProcess.take()?.kill()
        for namespace in [client, server] { try? Self.ip("netns", "del", namespace) }
        try? FileManager.default.removeItem(at: root)
    }

    static let ipPath = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "ip"

    /// Runs `ip` with `arguments` and fails with its error output if it fails.
    static func ip(_ arguments: String...) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ipPath)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw SpawnError(message: "ip \(arguments.joined(separator: " ")): \(message)")
        }
    }

    /// Namespaces `ferry-<pid>x<n>-c|s` whose test process is gone.
    static func sweepLeftovers() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/run/netns") else { return }
        for name in names where name.hasPrefix("ferry-") {
            let pid = name.dropFirst("ferry-".count).prefix { $0.isNumber }
            if let pid = Int32(pid), kill(pid, 0) != 0 { try? ip("netns", "del", name) }
        }
    }
}

/// The lab's server process, set once and taken at removal.
private final class LockedProcess: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var process: SpawnedProcess?
    func set(_ process: SpawnedProcess) { lock.withLock { self.process = process } }
    func take() -> SpawnedProcess? { lock.withLock { defer { process = nil }; return process } }
}
