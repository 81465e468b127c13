// Runs the built `ferryd` as a child process with its own data and runtime folders, as a
// user's session would; it can be killed with SIGKILL and started again on the same folders.
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

final class FerrydProcess: @unchecked Sendable {  // used by one test at a time
    let root: URL
    var dataDirectory: URL { root.appendingPathComponent("data") }
    var runtimeDirectory: URL { root.appendingPathComponent("run") }
    var socketPath: String { runtimeDirectory.appendingPathComponent("ferryd.sock").path }
    var logURL: URL { root.appendingPathComponent("ferryd.log") }
    /// Started with `posix_spawn`: a wrapper that execs ferryd (`ip netns exec`, `sh -c 'exec …'`)
    /// would stall Foundation's `Process` monitoring (see ``SpawnedProcess``).
    private(set) var process: SpawnedProcess?
    /// Prefixed to the command line (`["/bin/sh", "-c", "ulimit -f 64; exec \"$0\" \"$@\""]`).
    var wrapper: [String] = []
    var extraArguments: [String] = []

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("ferryd-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
    }

    /// Added to the test's own environment.
    var extraEnvironment: [String: String] = [:]

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.merging(extraEnvironment) { $1 }
        environment["FERRY_DATA_DIR"] = dataDirectory.path
        environment["FERRY_RUNTIME_DIR"] = runtimeDirectory.path
        environment["FERRYD_LOG_LEVEL"] = "debug"
        return environment
    }

    /// A new ferryd, started (call `cleanUp()` when done).
    static func started() async throws -> FerrydProcess {
        let ferryd = try FerrydProcess()
        do {
            try await ferryd.start()
        } catch {
            ferryd.cleanUp()
            throw error
        }
        return ferryd
    }

    /// A client that owns `session`.
    func owner(of session: String, name: String = "app") async throws -> RawClient {
        let client = try await RawClient.connected(to: socketPath, name: name)
        try await client.request(.attach(session))
        return client
    }

    /// Starts ferryd and waits (≤ 15 s) until its socket answers a hello.
    func start() async throws {
        let process = try launch()
        try await poll(until: "ferryd to answer a hello on \(socketPath)", timeout: .seconds(15), every: .milliseconds(50), observed: "its log:\n\(self.log.suffix(3000))") {
            if (try? await RawClient.connected(to: socketPath, name: "probe")) != nil { return true }
            guard process.isRunning else { throw TestFailure("ferryd exited at start:\n\(self.log)") }
            return false
        }
    }

    /// Starts ferryd and returns at once, before it serves.
    @discardableResult
    func launch() throws -> SpawnedProcess {
        // The test target depends on FerryDaemonApp, so `swift test` builds `ferryd` with the tests.
        let binary = try BuiltProducts.path(of: "ferryd")
        let command = wrapper + [binary] + extraArguments
        let process = try SpawnedProcess.start(command[0], Array(command.dropFirst()), environment: environment, log: logURL, appending: true)
        self.process = process
        return process
    }

    /// SIGKILL, and waits until it is gone.
    func kill9() {
        process?.kill()
        process = nil
    }

    /// SIGTERM, and waits (≤ 20 s) for it to exit; returns its status. One that does not exit
    /// is killed with SIGKILL, and the wait fails.
    @discardableResult
    func terminate() async throws -> Int32 {
        guard let process else { return 0 }
        kill(process.pid, SIGTERM)
        do {
            let status = try await process.exit(within: .seconds(20))
            self.process = nil
            return status
        } catch {
            kill9()
            throw TestFailure("ferryd did not exit within 20 s of SIGTERM; its log:\n\(log.suffix(2000))")
        }
    }

    /// Waits (≤ 20 s) for ferryd to exit on its own (after a `stop` request); its status.
    func exitStatus() async throws -> Int32 {
        guard let process else { return 0 }
        let status = try await process.exit(within: .seconds(20))
        self.process = nil
        return status
    }

    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    func cleanUp() {
        kill9()
        try? FileManager.default.removeItem(at: root)
    }

    /// Where a session without an app group keeps its files (ferryd's default containers).
    func container(session: String) -> URL {
        dataDirectory.appendingPathComponent("session-files/\(session)")
    }
}
