import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real `byteclub-server` binary, started as a process: killed with SIGKILL in the middle of
/// a 200 MiB upload (no torn file afterwards), and stopped gracefully with SIGTERM.
@Suite("byteclub-server process", .serialized)
struct ServerProcessTests {
    struct Running {
        let process: Process
        let port: Int
        let output: String
    }

    /// Starts the binary on port 0 and waits (bounded) for its "listening on" line.
    static func start(dataDirectory: String, arguments: [String] = []) async throws -> Running {
        let binary = try BuiltProducts.path(of: "byteclub-server")
        // In the data directory, so that removing the directory removes the log too.
        let output = dataDirectory + "/stdout-\(UUID().uuidString.prefix(6)).log"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--port", "0", "--data-dir", dataDirectory, "--dev-access-token", "kill-token", "--log-level", "warning"] + arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = FileHandle.nullDevice
        try process.run()
        do {
            let port = try await eventually("byteclub-server to print the port it listens on", timeout: .seconds(15), every: .milliseconds(50),
                                            observed: "its output: \(Self.read(output))") { () throws -> Int? in
                if let port = ServerOutput.listeningPort(in: Self.read(output)) { return port }
                guard process.isRunning else { throw TestFailure("byteclub-server exited: \(Self.read(output))") }
                return nil
            }
            return Running(process: process, port: port, output: output)
        } catch {
            await stop(process)
            throw error
        }
    }

    static func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Runs `body` against a freshly started server and stops the server afterwards, whether
    /// `body` returned or threw: the harness never leaves a byteclub-server behind.
    static func withServer<T>(
        dataDirectory: String, arguments: [String] = [], _ body: (Running) async throws -> T
    ) async throws -> T {
        let running = try await start(dataDirectory: dataDirectory, arguments: arguments)
        do {
            let result = try await body(running)
            await stop(running.process)
            return result
        } catch {
            await stop(running.process)
            throw error
        }
    }

    /// Teardown: SIGTERM, up to `seconds` for a graceful exit, then SIGKILL (and up to 5 s more
    /// for the kernel to reap it). Polls with async sleeps that ignore cancellation, so a
    /// cancelled test still stops its server.
    static func stop(_ process: Process, seconds: Double = 5) async {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<Int(seconds * 20) where process.isRunning {
            try? await Task.sleep(for: .milliseconds(50))
        }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        for _ in 0..<100 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits (bounded) for `process` to exit by itself; past `seconds` it is killed with SIGKILL
    /// and the wait fails.
    static func waitForExit(_ process: Process, seconds: Double) async throws {
        do {
            try await poll(until: "byteclub-server to exit by itself", timeout: .seconds(seconds), every: .milliseconds(50)) { !process.isRunning }
        } catch {
            await stop(process, seconds: 0)
            throw error
        }
    }

    static func request(_ port: Int, _ method: String, _ path: String, body: [UInt8] = [], token: String = "kill-token") async throws -> RawHTTP.Response {
        let connection = try RawHTTP(port: port)
        try await connection.head(method, path, [("Authorization", "Bearer \(token)"), ("Content-Length", "\(body.count)"), ("Connection", "close")])
        if !body.isEmpty { try await connection.send(body) }
        return try await connection.readFinal(method: method).final
    }

    @Test func killDuringA200MiBUploadLeavesNoTornFile() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let original = Bytes.pattern(1 << 20, seed: 1)
        let total = 200 << 20
        let chunk = Bytes.pattern(4 << 20, seed: 2)
        try await Self.withServer(dataDirectory: directory) { first in
            #expect(try await Self.request(first.port, "PUT", "/1/files_put/dropbox/big.bin", body: original).status == 200)

            // Overwrite with 200 MiB; after 100 MiB went out, kill -9 the server.
            let upload = try RawHTTP(port: first.port)
            try await upload.head("PUT", "/1/files_put/dropbox/big.bin", [("Authorization", "Bearer kill-token"), ("Content-Length", "\(total)")])
            for _ in 0..<25 { try await upload.send(chunk) }
            kill(first.process.processIdentifier, SIGKILL)
            try await Self.waitForExit(first.process, seconds: 10)
            #expect(first.process.terminationReason == .uncaughtSignal)
        }

        // The temp file the upload was writing is there, or not; no row points at it.
        try await Self.withServer(dataDirectory: directory) { second in
            let after = try await Self.request(second.port, "GET", "/1/files/dropbox/big.bin")
            #expect(after.status == 200)
            #expect(Bytes.sha256(after.body) == Bytes.sha256(original))
            let temps = TestServer.tempFiles(directory)
            #expect(temps.isEmpty, "start-up leaves no temp files: \(temps)")
            let blobs = try FileManager.default.contentsOfDirectory(atPath: directory + "/files/blobs")
            #expect(blobs.count == 1, "only the original's blob: \(blobs)")

            // And the full 200 MiB goes through afterwards, byte-exact.
            let full = try RawHTTP(port: second.port)
            try await full.head("PUT", "/1/files_put/dropbox/big.bin", [("Authorization", "Bearer kill-token"), ("Content-Length", "\(total)")])
            for _ in 0..<50 { try await full.send(chunk) }
            let stored = try await full.readFinal().final
            #expect(stored.status == 200)
            #expect(stored.text.contains("\"bytes\":\(total)"))
            let size = try FileManager.default.contentsOfDirectory(atPath: directory + "/files/blobs").compactMap {
                try FileManager.default.attributesOfItem(atPath: directory + "/files/blobs/" + $0)[.size] as? Int
            }
            #expect(size == [total])
        }
    }

    @Test func sigtermStopsGracefully() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.withServer(dataDirectory: directory) { running in
            let text = try String(contentsOfFile: running.output, encoding: .utf8)
            #expect(text.contains("BYTECLUB_ACCESS_TOKEN=kill-token"))
            #expect(text.contains("BYTECLUB_CLIENT_ID="))
            #expect(text.contains("BYTECLUB_APP_KEY="))
            #expect(text.contains("Created the development account"))
            #expect(try await Self.request(running.port, "GET", "/1/metadata/dropbox/").status == 200)
            running.process.terminate()  // SIGTERM
            try await Self.waitForExit(running.process, seconds: 15)
            #expect(running.process.terminationReason == .exit)
            #expect(running.process.terminationStatus == 0)
            let after = try String(contentsOfFile: running.output, encoding: .utf8)
            #expect(after.contains("stopped"))
        }
        // A second start finds the account instead of creating one.
        try await Self.withServer(dataDirectory: directory) { again in
            let text = try String(contentsOfFile: again.output, encoding: .utf8)
            #expect(text.contains("Development account:"))
        }
    }
}
