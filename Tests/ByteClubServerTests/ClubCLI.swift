import FerryTestSupport
import Foundation

/// `byteclub-server accounts …` (or `clients …`) run as a process against a data directory's
/// database (or `--database-url`'s), as an operator would while the server runs; bounded
/// (10 s, then SIGKILL and a failure saying so).
enum ClubCLI {
    struct Result: Sendable {
        let status: Int32
        let output: String
        let errors: String

        /// The value of `NAME=value` in the output (`BYTECLUB_ACCESS_TOKEN`…).
        func value(of name: String) -> String? {
            output.split(separator: "\n").lazy.map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
        }
    }

    /// Runs `COMMAND ARGUMENTS` (`accounts` or `clients`) on `dataDirectory`'s SQLite, or with
    /// `databaseURL` on that PostgreSQL.
    static func run(_ arguments: [String], dataDirectory: String, databaseURL: String? = nil,
                    command: String = "accounts") async throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("byteclub-cli-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let out = scratch + "/out", err = scratch + "/err"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: "byteclub-server"))
        process.arguments = [command] + arguments + ["--data-dir", dataDirectory] + (databaseURL.map { ["--database-url", $0] } ?? [])
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try process.run()
        do {
            try await poll(until: "`byteclub-server \(command) \(arguments.joined(separator: " "))` to exit", timeout: .seconds(10),
                           every: .milliseconds(20), observed: ServerProcessTests.read(out)) { !process.isRunning }
        } catch {
            await ServerProcessTests.stop(process, seconds: 0)
            throw error
        }
        return Result(status: process.terminationStatus, output: ServerProcessTests.read(out), errors: ServerProcessTests.read(err))
    }

    /// `accounts add NAME`; fails unless it succeeded and printed a token.
    static func add(_ name: String, dataDirectory: String, databaseURL: String? = nil) async throws -> (token: String, clientID: String) {
        let result = try await run(["add", name], dataDirectory: dataDirectory, databaseURL: databaseURL)
        guard result.status == 0, let token = result.value(of: "BYTECLUB_ACCESS_TOKEN"), let clientID = result.value(of: "BYTECLUB_CLIENT_ID") else {
            throw TestFailure("accounts add \(name) failed (\(result.status)): \(result.output) \(result.errors)")
        }
        return (token, clientID)
    }
}

extension ClubCLI {
    /// `accounts ARGUMENTS` (or `clients …`) on `server`'s database, whichever store it uses.
    static func run(_ arguments: [String], on server: TestServer, command: String = "accounts") async throws -> Result {
        try await run(arguments, dataDirectory: server.dataDirectory, databaseURL: server.databaseURL, command: command)
    }

    /// `accounts add NAME` on `server`'s database.
    static func add(_ name: String, to server: TestServer) async throws -> (token: String, clientID: String) {
        try await add(name, dataDirectory: server.dataDirectory, databaseURL: server.databaseURL)
    }
}

extension TestServer {
    /// The same server, with requests signed by another account's token.
    func signedIn(as token: String) -> TestServer {
        TestServer(base: base, port: port, token: token, clientID: clientID, appKey: appKey, dataDirectory: dataDirectory,
                   databaseURL: databaseURL)
    }
}
