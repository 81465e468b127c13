// Temporary folders, programs and manifests for the FerryApps tests: real files, real processes.
import FerryApps
import FerryTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder per test, with data and runtime folders inside, removed by `remove()`.
struct Sandbox {
    let root: URL
    let paths: FerryPaths

    init() throws {
        root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ferry-apps-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        paths = FerryPaths(dataDirectory: root.appendingPathComponent("data"), runtimeDirectory: root.appendingPathComponent("run"))
    }

    var registry: AppRegistry { AppRegistry(paths: paths) }

    func url(_ name: String) -> URL { root.appendingPathComponent(name) }

    /// A file with `mode`, its folders created. Written through an `O_CLOEXEC` descriptor:
    /// a child spawned meanwhile by a parallel test must not keep it open for writing, or
    /// exec'ing the file fails with "Text file busy".
    @discardableResult
    func write(_ text: String, to name: String, mode: Int = 0o755) throws -> String {
        try write(Data(text.utf8), to: name, mode: mode)
    }

    @discardableResult
    func write(_ data: Data, to name: String, mode: Int) throws -> String {
        let url = url(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode))
        try #require(descriptor >= 0, "open \(url.path): \(String(cString: strerror(errno)))")
        defer { close(descriptor) }
        let written = data.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        try #require(written == data.count)
        fchmod(descriptor, mode_t(mode))
        return url.path
    }

    /// A copy of a real binary (`sleep`), so that `/proc/PID/exe` of what it runs is this path.
    func program(_ name: String) throws -> String {
        try write(try Data(contentsOf: URL(fileURLWithPath: "/usr/bin/sleep")), to: name, mode: 0o755)
    }

    func remove() {
        // Folders made read-only or foreign by a test must not outlive it.
        _ = try? FileManager.default.removeItem(at: root)
    }
}

/// The ShareAlike app of docs/apps.md, with programs in `sandbox`.
func shareAlike(in sandbox: Sandbox) throws -> AppManifest {
    let app = try sandbox.program("opt/sharealike/bin/sharealike")
    let share = try sandbox.program("opt/sharealike/bin/sharealike-share")
    return AppManifest(
        bundleIdentifier: "com.example.sharealike",
        name: "ShareAlike",
        executables: [app],
        launch: [app, "--background-session", "{session}"],
        appGroups: ["group.com.example.sharealike"],
        extensions: [
            ExtensionManifest(
                bundleIdentifier: "com.example.sharealike.share",
                name: "Share to ShareAlike",
                executables: [share],
                point: "share",
                backgroundSessionIdentifier: "com.example.sharealike.bg",
                attributes: .object(["activationRule": .object(["supportsImageWithMaxCount": .number(10)])]))
        ])
}

/// A child process in its own process group, so that `stop()` also ends what it started
/// (a shell script's `sleep`). Foundation's `Process` waits for those grandchildren.
struct Child {
    let process: SpawnedProcess
    var pid: pid_t { process.pid }

    /// Starts `program args…` with stdin, stdout and stderr on /dev/null.
    init(_ program: String, _ arguments: [String]) throws {
        process = try SpawnedProcess.start(program, arguments, log: nil, ownProcessGroup: true)
    }

    /// SIGKILL to the whole group, then reaps the child.
    func stop() { process.kill() }

    /// Waits for the child to end by itself (at most `seconds`); its exit status.
    func exitStatus(within seconds: Double = 10) async throws -> Int32 {
        try await process.exit(within: .seconds(seconds))
    }
}

/// Waits (at most 10 s) until process `pid` runs `program`: until exec has happened,
/// /proc/PID/exe may still be the parent's program.
func waitForExec(_ pid: pid_t, _ program: String) async throws {
    try await poll(until: "process \(pid) to run \(program)", every: .milliseconds(10),
                   observed: "its /proc/\(pid)/exe: \(executablePath(ofProcess: pid) ?? "none")") { executablePath(ofProcess: pid) == program }
}

/// Waits (at most 10 s) until process `pid` is gone from /proc: reaped, no zombie left.
func waitUntilReaped(_ pid: pid_t) async throws {
    try await poll(until: "process \(pid) to be reaped", every: .milliseconds(10), observed: "/proc/\(pid) is still there") {
        !FileManager.default.fileExists(atPath: "/proc/\(pid)")
    }
}

/// The mode bits of a file (`0o700`), not following a link.
func mode(_ path: String) -> Int {
    var info = stat()
    guard lstat(path, &info) == 0 else { return -1 }
    return Int(info.st_mode & 0o7777)
}
