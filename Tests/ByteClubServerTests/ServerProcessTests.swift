import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real `byteclub-server` binary, started as a process: killed with SIGKILL in the middle of
/// a 200 MiB upload (no torn file afterwards), and stopped gracefully with SIGTERM.
@Suite("byteclub-server process", .serialized)
struct ServerProcessTests {
    static let binary: String? = {
        if let explicit = ProcessInfo.processInfo.environment["BYTECLUB_SERVER_BINARY"] { return explicit }
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let bundle = Bundle.main.bundleURL
        let candidates = [
            here.appendingPathComponent("byteclub-server"),
            bundle.appendingPathComponent("byteclub-server"),
            bundle.deletingLastPathComponent().appendingPathComponent("byteclub-server"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }?.path
    }()

    struct Running {
        let process: Process
        let port: Int
        let output: String
    }

    /// Starts the binary on port 0 and waits (bounded) for its "listening on" line.
    static func start(dataDirectory: String) async throws -> Running {
        let binary = try #require(binary, "byteclub-server was not built next to the tests")
        let output = dataDirectory + "-stdout-\(UUID().uuidString.prefix(6))"
        FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--port", "0", "--data-dir", dataDirectory, "--dev-access-token", "kill-token", "--log-level", "warning"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<300 {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let range = text.range(of: "listening on http://127.0.0.1:") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits), text[range.upperBound...].dropFirst(digits.count).first == "\n" {
                    return Running(process: process, port: port, output: output)
                }
            }
            if !process.isRunning { throw TestFailure("byteclub-server exited: \(text)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.terminate()
        throw TestFailure("byteclub-server did not start within 15 s")
    }

    static func waitForExit(_ process: Process, seconds: Double) async throws {
        for _ in 0..<Int(seconds * 20) where process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            throw TestFailure("process did not exit in \(seconds) s")
        }
    }

    static func request(_ port: Int, _ method: String, _ path: String, body: [UInt8] = []) async throws -> RawHTTP.Response {
        let connection = try RawHTTP(port: port)
        try await connection.head(method, path, [("Authorization", "Bearer kill-token"), ("Content-Length", "\(body.count)"), ("Connection", "close")])
        if !body.isEmpty { try await connection.send(body) }
        return try await connection.readFinal(method: method).final
    }

    @Test func killDuringA200MiBUploadLeavesNoTornFile() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await Self.start(dataDirectory: directory)
        let original = Bytes.pattern(1 << 20, seed: 1)
        #expect(try await Self.request(first.port, "PUT", "/1/files_put/dropbox/big.bin", body: original).status == 200)

        // Overwrite with 200 MiB; after 100 MiB went out, kill -9 the server.
        let total = 200 << 20
        let chunk = Bytes.pattern(4 << 20, seed: 2)
        let upload = try RawHTTP(port: first.port)
        try await upload.head("PUT", "/1/files_put/dropbox/big.bin", [("Authorization", "Bearer kill-token"), ("Content-Length", "\(total)")])
        for _ in 0..<25 { try await upload.send(chunk) }
        kill(first.process.processIdentifier, SIGKILL)
        try await Self.waitForExit(first.process, seconds: 10)
        #expect(first.process.terminationReason == .uncaughtSignal)

        // The temp file the upload was writing is there, or not; no row points at it.
        let second = try await Self.start(dataDirectory: directory)
        defer { second.process.terminate() }
        let after = try await Self.request(second.port, "GET", "/1/files/dropbox/big.bin")
        #expect(after.status == 200)
        #expect(Bytes.sha256(after.body) == Bytes.sha256(original))
        let temps = try FileManager.default.contentsOfDirectory(atPath: directory + "/files/tmp")
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

    @Test func sigtermStopsGracefully() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let running = try await Self.start(dataDirectory: directory)
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
        // A second start finds the account instead of creating one.
        let again = try await Self.start(dataDirectory: directory)
        defer { again.process.terminate() }
        #expect(try String(contentsOfFile: again.output, encoding: .utf8).contains("Development account:"))
    }
}
