import FerrySystem
import Foundation
public import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts an app's launch command so it can take a background session's events (the
/// `handleEventsForBackgroundURLSession` moment).
///
/// The program runs detached from ferryd: in its own session (`setsid`), standard input
/// `/dev/null`, standard output and error appended to `<logsDirectory>/<bundle id>.log`
/// (`0600`), every signal at its default disposition and unblocked, no descriptor of
/// ferryd's open but 0, 1 and 2, in the user's home folder (`$HOME`, else `/`). Its environment is ferryd's (less systemd's `LISTEN_*`,
/// `NOTIFY_SOCKET` and `WATCHDOG_*`) plus `FERRY_BACKGROUND_SESSION=<session>`,
/// `FERRY_DATA_DIR` and `FERRY_RUNTIME_DIR` (so it finds this ferryd even when ferryd was
/// given its folders by flags). A thread waits for
/// it, so no zombie is left, and logs how it ended.
///
/// ```swift
/// let launcher = AppLauncher(paths: paths, logger: logger)
/// let pid = try launcher.launch(app, session: "com.example.sharealike.bg")
/// ```
public struct AppLauncher: Sendable {
    public let paths: FerryPaths
    public let logger: Logger

    public init(paths: FerryPaths, logger: Logger) {
        self.paths = paths
        self.logger = logger
    }

    /// How a launched program ended.
    public enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Runs `app.launch` with `{session}` replaced by `session`; returns its pid at once
    /// (it does not wait for the app to start or connect). `onExit` is called on the
    /// reaping thread when the program ends.
    ///
    /// - Throws: ``AppLaunchError`` when the log cannot be opened or the program cannot be
    ///   started (missing, not executable); nothing is running then.
    @discardableResult
    public func launch(
        _ app: AppManifest, session: String,
        onExit: (@Sendable (_ pid: Int32, _ termination: Termination) -> Void)? = nil
    ) throws -> Int32 {
        guard let program = app.launch.first else {
            throw AppLaunchError("\(app.bundleIdentifier) has no launch command")
        }
        let arguments = app.launch.map { $0.replacingOccurrences(of: "{session}", with: session) }
        var logger = self.logger
        logger[metadataKey: "app"] = "\(app.bundleIdentifier)"
        logger[metadataKey: "session"] = "\(session)"

        let logURL = try openLogFolder().appendingPathComponent(FerryPaths.fileName(app.bundleIdentifier) + ".log")
        let log = open(logURL.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard log >= 0 else {
            throw AppLaunchError("cannot open the launch log \(logURL.path): \(String(cString: strerror(errno)))")
        }
        defer { close(log) }
        let stamp = ISO8601DateFormatter().string(from: Date())
        Self.append("--- \(stamp) ferryd launches \(app.bundleIdentifier) for session \(session)\n", to: log)

        var environment = ProcessInfo.processInfo.environment
        // systemd's socket-activation and notify variables are ferryd's, not the app's.
        for name in ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC"] {
            environment[name] = nil
        }
        environment["FERRY_BACKGROUND_SESSION"] = session
        environment["FERRY_DATA_DIR"] = paths.dataDirectory.path
        environment["FERRY_RUNTIME_DIR"] = paths.runtimeDirectory.path

        // ferryd's own folder is wherever the client that started it was: not the app's.
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/"
        let pid: pid_t
        do {
            pid = try Self.spawn(program: program, arguments: arguments, environment: environment, directory: home, output: log)
        } catch {
            Self.append("--- cannot start \(program): \(error)\n", to: log)
            logger.warning("cannot launch the app", metadata: ["error": "\(error)"])
            throw error
        }
        logger.notice("launched the app", metadata: ["pid": "\(pid)", "log": "\(logURL.path)"])
        let reaperLogger = logger
        Thread.detachNewThread {
            let termination = Self.reap(pid)
            switch termination {
            case .exited(0): reaperLogger.info("the launched app exited", metadata: ["pid": "\(pid)", "status": "0"])
            case .exited(let status): reaperLogger.warning("the launched app failed", metadata: ["pid": "\(pid)", "status": "\(status)"])
            case .signalled(let signal): reaperLogger.warning("the launched app was killed", metadata: ["pid": "\(pid)", "signal": "\(signal)"])
            case nil: reaperLogger.debug("the launched app was reaped elsewhere", metadata: ["pid": "\(pid)"])
            }
            if let termination { onExit?(pid, termination) }
        }
        return pid
    }

    /// The logs folder, created `0700`.
    func openLogFolder() throws -> URL {
        do {
            return try paths.prepareLogsDirectory()
        } catch {
            throw AppLaunchError("cannot create the launch logs folder: \(error)")
        }
    }

    /// `waitpid` until the child ends; nil when someone else reaped it first.
    static func reap(_ pid: pid_t) -> Termination? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, 0)
            if result == pid { break }
            if result < 0, errno == EINTR { continue }
            return nil
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (macros).
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }

    /// `posix_spawn` with a new session, default signals, stdin `/dev/null`, stdout and
    /// stderr to `output`, and every other descriptor closed.
    static func spawn(program: String, arguments: [String], environment: [String: String], directory: String, output: Int32) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        SpawnActions.changeDirectory(&actions, to: directory)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        SpawnActions.closeOthers(&actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc ≥ 2.26) is behind _GNU_SOURCE, hidden from Swift; the value is ABI.
        let setSession: Int32 = 0x80
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | setSession))
        // Ignored signals survive exec (ferryd ignores SIGPIPE and SIGXFSZ): reset them all.
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        var result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        // ETXTBSY: another thread's fork briefly holds the program open for writing (it was
        // just installed or rebuilt). It passes; try a few times before giving up.
        var attempts = 1
        while result == ETXTBSY, attempts < 20 {
            usleep(50_000)
            attempts += 1
            result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        }
        guard result == 0 else {
            throw AppLaunchError("cannot start \(program): \(String(cString: strerror(result)))")
        }
        return pid
    }

    static func append(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { buffer in _ = Glibc.write(descriptor, buffer.baseAddress, buffer.count) }
    }
}

/// An app could not be launched; the message says which and why.
public struct AppLaunchError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
