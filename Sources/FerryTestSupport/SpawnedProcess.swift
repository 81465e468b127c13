import FerrySystem
public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A child process started with `posix_spawn` and reaped with `waitpid`, for programs that
/// exec another (systemd-socket-activate execs ferryd) or fork a server (tmux).
///
/// Foundation's `Process` learns of a child's end when a descriptor the child inherited
/// closes; an exec closes it, and `Process` then blocks its one monitoring thread in `wait4`
/// until the new program ends: every other `Process` of the test run waits with it.
///
/// ```swift
/// let child = try SpawnedProcess.start("/usr/bin/systemd-socket-activate", ["-l", socket, ferryd], log: logURL)
/// defer { child.kill() }
/// let status = try await child.exit(within: .seconds(15))
/// ```
public final class SpawnedProcess: Sendable {
    public let pid: pid_t
    /// Where standard output and standard error go (nil: /dev/null).
    public let log: URL?
    /// Whether it leads a process group of its own, which `kill()` ends whole.
    public let ownProcessGroup: Bool
    private let reaped = LockedStatus()

    private init(pid: pid_t, log: URL?, ownProcessGroup: Bool) {
        self.pid = pid
        self.log = log
        self.ownProcessGroup = ownProcessGroup
    }

    /// Starts `program` with `arguments`, the current environment plus `environment`, stdin
    /// from /dev/null and stdout and stderr to `log` (nil: /dev/null; emptied first unless
    /// `appending`). With `ownProcessGroup` it leads a new process group, so `kill()` also ends
    /// what it started (a script's `sleep`).
    public static func start(
        _ program: String, _ arguments: [String], environment: [String: String] = [:], log: URL?, appending: Bool = false,
        ownProcessGroup: Bool = false
    ) throws -> SpawnedProcess {
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log?.path ?? "/dev/null", O_WRONLY | O_CREAT | (appending ? O_APPEND : O_TRUNC), 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The test's own sockets (SwiftNIO's are not close-on-exec) must not live on in the
        // child: a ferryd started by one test held another test's connection open for seconds.
        SpawnActions.closeOthers(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if ownProcessGroup {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        var pid = pid_t()
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else { throw SpawnError(message: "cannot start \(program): \(String(cString: strerror(result)))") }
        return SpawnedProcess(pid: pid, log: log, ownProcessGroup: ownProcessGroup)
    }

    /// The exit status (or 128 + signal), once the process has ended; nil while it runs.
    public var exitStatus: Int32? {
        if let status = reaped.value { return status }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        reaped.value = code
        return code
    }

    public var isRunning: Bool { exitStatus == nil }

    /// Waits (polling) for the process to end; its exit status.
    public func exit(within timeout: Duration) async throws -> Int32 {
        try await eventually("pid \(pid) to exit", timeout: timeout, every: .milliseconds(20), observed: String(output.suffix(1000))) { exitStatus }
    }

    /// Blocks until the process ends (for commands that answer in milliseconds); its exit status.
    public func waitUntilExit() -> Int32 {
        if let status = exitStatus { return status }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        reaped.value = code
        return code
    }

    /// The output so far.
    public var output: String { log.flatMap { try? String(contentsOf: $0, encoding: .utf8) } ?? "" }

    /// SIGKILL (to its whole group when it leads one: what it started goes too), then reaps it.
    public func kill() {
        if ownProcessGroup { Glibc.kill(-pid, SIGKILL) }
        guard exitStatus == nil else { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped.value = 128 + SIGKILL
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
    public init(message: String) { self.message = message }
}

/// The reaped status, written once from whichever task saw the exit.
private final class LockedStatus: @unchecked Sendable {
    private let lock = NSLock()
    private var status: Int32?
    var value: Int32? {
        get { lock.withLock { status } }
        set { lock.withLock { status = newValue } }
    }
}
