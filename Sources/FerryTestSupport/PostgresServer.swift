public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server for tests: `initdb` in a temporary folder, `pg_ctl start` on a
/// free port of 127.0.0.1 and a unix socket in that folder, trust authentication for the user
/// `ferry`; ``stop()`` ends it and removes the folder.
///
/// PostgreSQL refuses to run as root: as root, the server's commands run as the `postgres`
/// user that Debian's package makes (through `setpriv`), and the folder is given to it. The
/// binaries are found in `$POSTGRES_BIN_DIR`, else the newest `/usr/lib/postgresql/*/bin`
/// (`scripts/install-deps` installs Debian's `postgresql`), else `PATH`.
///
/// ```swift
/// let postgres = try await PostgresServer.start()
/// defer { Task { await postgres.stop() } }
/// let url = try await postgres.createDatabase()   // postgres://ferry@127.0.0.1:PORT/test_…
/// ```
public final class PostgresServer: Sendable {
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The folder holding the cluster (`data/`), its log and its socket.
    public let directory: String
    /// The superuser tests connect as (no password: trust authentication, loopback only).
    public let user = "ferry"
    private let binaries: String
    private let runAs: (uid: uid_t, gid: gid_t)?

    private init(port: Int, directory: String, binaries: String, runAs: (uid: uid_t, gid: gid_t)?) {
        self.port = port
        self.directory = directory
        self.binaries = binaries
        self.runAs = runAs
    }

    /// Makes and starts a cluster; each step is bounded and says what it waited for.
    public static func start() async throws -> PostgresServer {
        let binaries = try binaryFolder()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-pg-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var runAs: (uid: uid_t, gid: gid_t)?
        if getuid() == 0 {
            guard let account = getpwnam("postgres") else {
                throw PostgresServerError("running as root, and PostgreSQL refuses root: no 'postgres' user to run it as (scripts/install-deps installs postgresql, which makes one)")
            }
            runAs = (account.pointee.pw_uid, account.pointee.pw_gid)
            guard chown(directory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                throw PostgresServerError("chown \(directory) to postgres failed: errno \(errno)")
            }
        }
        var server = PostgresServer(port: try freePort(), directory: directory, binaries: binaries, runAs: runAs)
        do {
            try await server.command("initdb", ["-D", server.dataDirectory, "-U", server.user, "--auth=trust", "--no-sync",
                                                "-E", "UTF8", "--locale=C"], within: .seconds(120))
            // The free port is found by binding and closing; another process (a test's
            // outgoing connection) may take it before PostgreSQL binds it: then another port.
            for attempt in 1...3 {
                do {
                    try await server.startCluster()
                    return server
                } catch where attempt < 3 && server.log.contains("already in use") {
                    server = PostgresServer(port: try freePort(), directory: directory, binaries: binaries, runAs: runAs)
                }
            }
            throw PostgresServerError("unreachable: the last attempt's error is thrown")
        } catch {
            await server.stop()
            throw error
        }
    }

    private func startCluster() async throws {
        let options = "-k \(directory) -h 127.0.0.1 -p \(port) -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        try await command("pg_ctl", ["-D", dataDirectory, "-l", directory + "/server.log", "-o", options, "-w", "-t", "60", "start"], within: .seconds(90))
    }

    public var dataDirectory: String { directory + "/data" }

    /// `postgres://ferry@127.0.0.1:PORT/NAME`.
    public func url(database: String) -> String { "postgres://\(user)@127.0.0.1:\(port)/\(database)" }

    /// Creates a fresh database (`test_<random>` unless named) and returns its URL.
    public func createDatabase(_ name: String = "test_\(UUID().uuidString.prefix(8).lowercased())") async throws -> String {
        try await command("createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", user, name], within: .seconds(30))
        return url(database: name)
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`, bounded) and removes its folder.
    public func stop() async {
        if FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid") {
            try? await command("pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "-t", "30", "stop"], within: .seconds(40))
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The server's log so far (for a failure's message).
    public var log: String { (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "" }

    /// Runs one of PostgreSQL's programs (as `postgres` when this process is root) and waits
    /// for it; its output is in the error when it fails.
    private func command(_ program: String, _ arguments: [String], within limit: Duration) async throws {
        let output = URL(fileURLWithPath: directory + "/\(program).out")
        var executable = binaries + "/" + program
        var argv = arguments
        if let runAs {
            argv = ["--reuid=\(runAs.uid)", "--regid=\(runAs.gid)", "--clear-groups", "--", executable] + arguments
            executable = "/usr/bin/setpriv"
        }
        let child = try SpawnedProcess.start(executable, argv, log: output)
        let status: Int32
        do {
            status = try await child.exit(within: limit)
        } catch {
            child.kill()
            throw PostgresServerError("\(program) did not finish within \(limit): \(child.output.suffix(2000))")
        }
        guard status == 0 else {
            throw PostgresServerError("\(program) \(arguments.joined(separator: " ")) failed (\(status)): \(child.output.suffix(2000)) \(log.suffix(1000))")
        }
    }

    /// Where `initdb` and `pg_ctl` are.
    private static func binaryFolder() throws -> String {
        let fm = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment["POSTGRES_BIN_DIR"] { return explicit }
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted()
        if let newest = versions.last, fm.isExecutableFile(atPath: "/usr/lib/postgresql/\(newest)/bin/initdb") {
            return "/usr/lib/postgresql/\(newest)/bin"
        }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") where fm.isExecutableFile(atPath: "\(folder)/initdb") {
            return String(folder)
        }
        throw PostgresServerError("PostgreSQL's initdb was not found (POSTGRES_BIN_DIR, /usr/lib/postgresql/*/bin, PATH): run scripts/install-deps")
    }
}

/// A step of starting or using a ``PostgresServer`` failed; the message says which and why.
public struct PostgresServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
