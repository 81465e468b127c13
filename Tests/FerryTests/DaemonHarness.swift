import Ferry
import FerryTestSupport
import Foundation

/// A ferryd of one test's own: fresh data and runtime directories, the real `ferryd` binary
/// built beside the test runner, started as a child process, killed with SIGKILL on demand,
/// stopped at the end. Sessions made with ``configuration(_:)`` use its directories.
final class DaemonHarness: @unchecked Sendable {  // `process` changes only on the test's own task
    let dataDirectory: URL
    let runtimeDirectory: URL
    /// The `ferryd` this build made (the test target depends on FerryDaemonApp).
    let ferrydPath: String
    private var process: Process?

    /// ferryd's output (outside the folders `stop()` removes; kept with FERRY_KEEP_TEST_LOGS=1).
    var logFile: URL {
        URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ferryd-test-\(dataDirectory.deletingLastPathComponent().lastPathComponent).log")
    }

    /// Its own folders, and its own folder of Foundation's defaults (`UserDefaults(suiteName:)`
    /// of the apps it runs; `ferry apps install` links their groups' there).
    var environment: [String: String] {
        ["FERRY_DATA_DIR": dataDirectory.path, "FERRY_RUNTIME_DIR": runtimeDirectory.path,
         "XDG_CONFIG_HOME": dataDirectory.deletingLastPathComponent().appendingPathComponent("config").path]
    }

    private init(dataDirectory: URL, runtimeDirectory: URL, ferrydPath: String) {
        self.dataDirectory = dataDirectory
        self.runtimeDirectory = runtimeDirectory
        self.ferrydPath = ferrydPath
    }

    /// Directories only; the library may start ferryd itself.
    static func prepare() throws -> DaemonHarness {
        let ferryd = try BuiltProducts.path(of: "ferryd")
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ferry-bg-\(UUID().uuidString.prefix(8))")
        let harness = DaemonHarness(
            dataDirectory: base.appendingPathComponent("data"), runtimeDirectory: base.appendingPathComponent("run"), ferrydPath: ferryd)
        for directory in [harness.dataDirectory, harness.runtimeDirectory] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        return harness
    }

    static func start() async throws -> DaemonHarness {
        let harness = try prepare()
        try await harness.launch()
        return harness
    }

    func configuration(_ identifier: String) -> Configuration {
        var configuration = Configuration.background(identifier: identifier)
        configuration.ferryEnvironment = environment.merging(["FERRYD_PATH": ferrydPath]) { $1 }
        return configuration
    }

    private func launch() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ferrydPath)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let log = logFile
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        try handle.seekToEnd()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        self.process = process
        let socket = runtimeDirectory.appendingPathComponent("ferryd.sock").path
        try await poll(until: "ferryd to create \(socket)", timeout: .seconds(5), every: .milliseconds(25),
                       observed: "its log: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")") {
            FileManager.default.fileExists(atPath: socket)
        }
    }

    /// SIGKILL, and wait until it is gone.
    func kill9() throws {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    func restart() async throws {
        try kill9()
        try await launch()
    }

    func stop() {
        // SIGKILL: these tests are not about ferryd's graceful stop (ferryd's own tests are),
        // and waiting for one here would hold a cooperative thread the servers need.
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        process = nil
        stopStartedDaemon()
        try? FileManager.default.removeItem(at: dataDirectory.deletingLastPathComponent())
        // FERRY_KEEP_TEST_LOGS=1 keeps ferryd's output for a failure to be read.
        if ProcessInfo.processInfo.environment["FERRY_KEEP_TEST_LOGS"] == nil { try? FileManager.default.removeItem(at: logFile) }
    }

    /// ferryd processes serving these directories (one started by the library, not by us).
    func runningDaemonPIDs() -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { pid in
            guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"), exe.hasSuffix("/ferryd"),
                let environ = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
            else { return false }
            return environ.split(separator: 0).contains { String(decoding: $0, as: UTF8.self) == "FERRY_RUNTIME_DIR=\(runtimeDirectory.path)" }
        }
    }

    /// Kills a ferryd the library started for these directories.
    func stopStartedDaemon() {
        for pid in runningDaemonPIDs() { kill(pid, SIGKILL) }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs the built `ferry` with `arguments`; its exit status and its output (stdout, then stderr).
func runFerry(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, output: String) {
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-out-\(UUID().uuidString.prefix(8))")
    defer { try? FileManager.default.removeItem(at: log) }
    let ferry = try SpawnedProcess.start(try BuiltProducts.path(of: "ferry"), arguments, environment: environment, log: log)
    let status = try await ferry.exit(within: .seconds(30))
    return (status, ferry.output)
}
