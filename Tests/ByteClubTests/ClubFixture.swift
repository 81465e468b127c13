import FerryTestSupport
import Foundation
import Testing

/// A real `byteclub-server` process on a free port with a fresh data directory, and a home for
/// `byteclub` processes (its own XDG config, cache and data folders). `with { club in … }` runs
/// a body and always stops the server and removes the folders.
struct ClubFixture: Sendable {
    static let token = "club-dev-token"
    let root: URL
    let server: URL
    let serverProcess: SpawnedProcess

    /// With `stablePort`, the server listens on a port outside the kernel's ephemeral range, so
    /// a test can stop it and start it again on the same port without another test's server
    /// (on an ephemeral port) taking it meanwhile.
    static func with<T>(serverArguments: [String] = [], stablePort: Bool = false, _ body: (ClubFixture) async throws -> T) async throws -> T {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("byteclub-app-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("home"), withIntermediateDirectories: true)
        defer {
            stopDaemon(root)
            try? FileManager.default.removeItem(at: root)
        }
        let (process, port) = try await startServer(root: root, port: stablePort ? try unusedStablePort() : 0, arguments: serverArguments)
        defer { process.kill() }
        return try await body(ClubFixture(root: root, server: URL(string: "http://127.0.0.1:\(port)")!, serverProcess: process))
    }

    /// A byteclub-server on `port` (0: any) with the fixture's data folder; its process and port.
    static func startServer(root: URL, port: Int, arguments: [String] = []) async throws -> (SpawnedProcess, Int) {
        let process = try SpawnedProcess.start(
            try BuiltProducts.path(of: "byteclub-server"),
            ["--port", "\(port)", "--data-dir", root.appendingPathComponent("data").path, "--dev-access-token", token, "--log-level", "warning"] + arguments,
            log: root.appendingPathComponent("server-\(UUID().uuidString.prefix(6)).log"))
        do {
            let port = try await eventually("byteclub-server to print its port", timeout: .seconds(20), every: .milliseconds(50),
                                            observed: process.output) { () throws -> Int? in
                guard process.isRunning else { throw TestFailure("byteclub-server exited: \(process.output)") }
                return ServerOutput.listeningPort(in: process.output)
            }
            return (process, port)
        } catch {
            process.kill()
            throw error
        }
    }

    /// A free port in 20000–29999, below Linux's ephemeral range (32768–60999).
    static func unusedStablePort() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20000...29999)
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(socket) }
            let bound = withLoopbackAddress(port: port) { bind(socket, $0, $1) }
            if bound == 0 { return port }
        }
        throw TestFailure("no free port in 20000–29999")
    }

    /// A new member of the club, made by the real `byteclub-server accounts add`; their token.
    func addMember(_ name: String) async throws -> String {
        let process = try SpawnedProcess.start(
            try BuiltProducts.path(of: "byteclub-server"), ["accounts", "add", name, "--data-dir", root.appendingPathComponent("data").path],
            log: root.appendingPathComponent("accounts-\(name).log"))
        let status = try await process.exit(within: .seconds(30))
        guard status == 0, let line = process.output.split(separator: "\n").first(where: { $0.contains("BYTECLUB_ACCESS_TOKEN=") }) else {
            throw TestFailure("accounts add \(name) exited \(status): \(process.output)")
        }
        return String(line.split(separator: "=", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces)
    }

    /// The fixture's own ferryd folders: `byteclub` (through the Ferry library) starts ferryd
    /// there when it needs it, and `stopDaemon` ends it.
    var ferryEnvironment: [String: String] {
        ["FERRY_DATA_DIR": root.appendingPathComponent("ferry/data").path, "FERRY_RUNTIME_DIR": root.appendingPathComponent("ferry/run").path]
    }

    /// SIGKILL to a ferryd started for this fixture (found by its data folder in /proc), so none outlives the test.
    static func stopDaemon(_ root: URL) {
        let marker = "FERRY_DATA_DIR=" + root.appendingPathComponent("ferry/data").path
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ"),
                  let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"), exe.hasSuffix("/ferryd") else { continue }
            if environ.split(separator: 0).contains(where: { String(decoding: $0, as: UTF8.self) == marker }) { kill(pid, SIGKILL) }
        }
    }

    /// The environment of a `byteclub` run by the member living in `home/<member>`.
    func environment(member: String = "dev", signedIn: Bool = true) -> [String: String] {
        let home = root.appendingPathComponent("home/\(member)").path
        var environment = ferryEnvironment.merging([
            "HOME": home, "XDG_CONFIG_HOME": home + "/config", "XDG_CACHE_HOME": home + "/cache", "XDG_DATA_HOME": home + "/data",
            "BYTECLUB_PROGRESS": "1", "BYTECLUB_SERVER": "", "BYTECLUB_ACCESS_TOKEN": "",
        ]) { $1 }
        if signedIn {
            environment["BYTECLUB_SERVER"] = server.absoluteString
            environment["BYTECLUB_ACCESS_TOKEN"] = Self.token
        }
        return environment
    }

    /// Starts `byteclub arguments…` in the current folder set to `home/<member>`.
    /// With `input`, that text is its standard input (else /dev/null).
    func start(_ arguments: [String], member: String = "dev", signedIn: Bool = true, environment extra: [String: String] = [:],
               input: String? = nil) throws -> SpawnedProcess {
        let name = UUID().uuidString.prefix(6)
        let log = root.appendingPathComponent("byteclub-\(name).log")
        let stdin = root.appendingPathComponent("stdin-\(name)")
        try Data((input ?? "").utf8).write(to: stdin)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("home/\(member)"), withIntermediateDirectories: true)
        // cd first: `photos get` writes into the current folder.
        let script = input == nil ? "cd \"$1\" && shift && exec \"$@\"" : "cd \"$1\" && shift && exec \"$@\" < \"\(stdin.path)\""
        return try SpawnedProcess.start(
            "/bin/sh", ["-c", script, "sh", root.appendingPathComponent("home/\(member)").path, try BuiltProducts.path(of: "byteclub")] + arguments,
            environment: environment(member: member, signedIn: signedIn).merging(extra) { $1 }, log: log)
    }

    /// Runs `byteclub arguments…` to its end (bounded); its exit status and output.
    func run(_ arguments: [String], member: String = "dev", signedIn: Bool = true, environment extra: [String: String] = [:],
             input: String? = nil, timeout: Duration = .seconds(60)) async throws -> (status: Int32, output: String) {
        let process = try start(arguments, member: member, signedIn: signedIn, environment: extra, input: input)
        defer { process.kill() }
        let status = try await process.exit(within: timeout)
        return (status, process.output)
    }

    /// A file in the member's home (the home is made when missing).
    func file(_ name: String, member: String = "dev") -> URL {
        let home = root.appendingPathComponent("home/\(member)")
        try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        return home.appendingPathComponent(name)
    }
}

