// Runs the built `ferry` executable as a child process, the way a user or a script does.
import Crypto
import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What one run of `ferry` did.
struct FerryRun {
    var status: Int32
    var stdout: String
    var stderr: String

    /// Standard output parsed as one JSON object.
    var json: [String: Any]? {
        guard let data = stdout.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}

enum FerryBinary {
    /// Starts `ferry args…` with stdout and stderr going to files in `scratch`.
    /// `executable` runs instead of ferry (a shell that sets a limit, then execs ferry).
    static func start(_ args: [String], in scratch: URL, environment: [String: String] = [:], executable: String? = nil) throws -> (Process, URL, URL) {
        // The test target depends on FerryCLI, so `swift test` builds `ferry` with the tests.
        let binary = try executable ?? BuiltProducts.path(of: "ferry")
        let id = UUID().uuidString.prefix(8)
        let out = scratch.appendingPathComponent("stdout-\(id)")
        let err = scratch.appendingPathComponent("stderr-\(id)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = args
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.currentDirectoryURL = scratch
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        return (process, out, err)
    }

    /// Waits (at most `timeout` seconds) for a started process to exit. Past that, or when
    /// the test is cancelled, the process is killed and the wait fails, showing its stderr.
    static func wait(_ started: (Process, URL, URL), timeout: Double = 60) async throws -> FerryRun {
        let (process, out, err) = started
        let command = ([process.executableURL?.lastPathComponent ?? "ferry"] + (process.arguments ?? [])).joined(separator: " ")
        do {
            try await poll(until: "`\(command.prefix(300))` to exit", timeout: .seconds(timeout),
                           observed: "still running; its stderr: \(read(err).suffix(2000))") { !process.isRunning }
        } catch {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw error
        }
        process.waitUntilExit()  // reaped already: returns at once
        return FerryRun(status: process.terminationStatus, stdout: read(out), stderr: read(err))
    }

    /// Kills a started process when `body` throws (a wait for what it should do ran out).
    @discardableResult
    static func killed<T>(_ started: (Process, URL, URL), ifThrows body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            kill(started.0.processIdentifier, SIGKILL)
            started.0.waitUntilExit()
            throw error
        }
    }

    private static func read(_ file: URL) -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }

    /// Runs `ferry args…` to its end (at most `timeout` seconds).
    static func run(_ args: [String], in scratch: URL, timeout: Double = 60, environment: [String: String] = [:]) async throws -> FerryRun {
        try await wait(try start(args, in: scratch, environment: environment), timeout: timeout)
    }
}

/// A fresh directory for one test's files, removed by `remove()`.
struct Scratch {
    let url: URL
    init() throws {
        url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ferry-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func remove() { try? FileManager.default.removeItem(at: url) }
}

func sha256Hex(ofFile path: String) throws -> String {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

func fileSize(_ path: String) -> Int64? {
    (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
}
