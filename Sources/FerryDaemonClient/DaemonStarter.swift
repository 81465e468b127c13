import FerryApps
import FerrySystem
import Foundation
import Glibc
import Logging

/// Starts ferryd detached from the caller: a short-lived extension must be able to start it
/// and exit without taking it down or leaving a zombie. `/bin/sh` runs ferryd in the
/// background and exits at once (we reap it), so ferryd is re-parented to init or the
/// user's subreaper; `POSIX_SPAWN_SETSID` puts both in a new session, away from the
/// caller's terminal and its signals. Two clients racing both start one: ferryd's own lock
/// makes the second exit quietly.
struct DaemonStarter {
    let endpoint: DaemonEndpoint
    let logger: Logger

    func start() throws(DaemonConnectionError) {
        guard let executable = endpoint.resolvedDaemonExecutable() else {
            throw .cannotStartDaemon("no ferryd program found (set FERRYD_PATH, put ferryd beside this program or on PATH, or enable the systemd user socket)")
        }
        let logDirectory = URL(fileURLWithPath: endpoint.daemonLogPath).deletingLastPathComponent().path
        try? FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let script = "exec \"$0\" </dev/null >>\"$1\" 2>&1 &"
        let arguments = ["/bin/sh", "-c", script, executable, endpoint.daemonLogPath]
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in endpoint.daemonEnvironment { environment[name] = value }
        let pid = try spawn(arguments, environment: environment)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        logger.info("started ferryd", metadata: ["program": "\(executable)", "log": "\(endpoint.daemonLogPath)"])
    }

    private func spawn(_ arguments: [String], environment: [String: String]) throws(DaemonConnectionError) -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc ≥ 2.26) is hidden behind _GNU_SOURCE in the headers.
        let spawnSetsid: Int16 = 0x80
        posix_spawnattr_setflags(&attributes, spawnSetsid)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        // Only stdin, stdout and stderr go to the shell (and so to ferryd): a descriptor of
        // ours left open in ferryd — a pipe a parent waits on for EOF, a listening socket —
        // would outlive this process by as long as ferryd runs.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        SpawnActions.closeOthers(&actions)
        var pid = pid_t()
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw .cannotStartDaemon("posix_spawn of /bin/sh failed: \(String(cString: strerror(result)))")
        }
        return pid
    }
}
