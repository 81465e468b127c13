import ArgumentParser
import FerryApps
import FerryDaemonClient
import FerryProtocol
import Logging
import Foundation

/// Options every command that talks to ferryd shares.
struct DaemonOptions: ParsableArguments {
    @Option(name: .long, help: "The background session (default: ferry's own, `ferry.cli`).")
    var session: String = DaemonAccess.cliSession

    @Flag(name: .long, help: "Print JSON on standard output, for scripts.")
    var json = false
}

/// The CLI's way to ferryd: the socket from `FerryPaths`, a connection per command, and the
/// answers turned into `CLIFailure`s a person can read.
enum DaemonAccess {
    /// The session `ferry upload` and `ferry download` put their tasks in.
    static let cliSession = "ferry.cli"

    static func endpoint(startsDaemon: Bool) throws -> DaemonEndpoint {
        try paths().endpoint(startsDaemon: startsDaemon)
    }

    static func paths() throws -> FerryPaths {
        do {
            let paths = try FerryPaths()
            try paths.prepare()
            return paths
        } catch {
            throw CLIFailure(exitStatus: ExitStatus.failure, code: "paths", message: "cannot use Ferry's folders: \(error)")
        }
    }

    /// Opens a connection; `startsDaemon` false reports "not running" instead of starting one.
    static func connect(startsDaemon: Bool = true) async throws -> DaemonConnection {
        do {
            var logger = Logger(label: "ferry.daemon-client")
            logger.logLevel = .warning  // the CLI says what matters itself
            return try await DaemonConnection.open(try endpoint(startsDaemon: startsDaemon), clientName: "ferry-cli", logger: logger)
        } catch let error as DaemonConnectionError {
            throw failure(error)
        }
    }

    /// Performs one call of the client layer a background `Session` uses too
    /// (FerryDaemonClient's `DaemonCall`); ferryd's refusal becomes a `CLIFailure` naming its code.
    static func perform<Result>(_ call: DaemonCall<Result>, on connection: DaemonConnection) async throws -> Result {
        do {
            return try await connection.perform(call)
        } catch {
            throw failure(error)
        }
    }

    /// Attaches to `session`: as its owner to change it, as a watcher to look.
    static func attach(_ session: String, owner: Bool, on connection: DaemonConnection) async throws -> Attached {
        try await perform(.attach(AttachSession(sessionIdentifier: session, owner: owner)), on: connection)
    }

    /// Attaches to `session` to change it: as its owner, or, when another process owns it,
    /// as a watcher, which ferryd lets submit and suspend, resume or cancel a task in a
    /// session of no app (the CLI's own; a `--wait` in another shell owns it). A session this
    /// creates keeps no events for a later owner: ferryd delivers the CLI's files itself.
    static func attachToChange(_ session: String, on connection: DaemonConnection) async throws -> Attachment {
        do {
            _ = try await perform(.attach(AttachSession(sessionIdentifier: session, owner: true, keepsEvents: false)), on: connection)
            return Attachment(owns: true, inUse: nil)
        } catch let failure as CLIFailure where failure.code == FerryProtocolError.Code.backgroundSessionInUseByAnotherProcess.rawValue {
            _ = try await attach(session, owner: false, on: connection)
            return Attachment(owns: false, inUse: failure)
        }
    }

    /// How a command is attached to the session it changes.
    struct Attachment {
        var owns: Bool
        /// Why it is not the owner: said instead of `notOwner` if ferryd refuses a watcher
        /// (an app's session is its owner's alone).
        var inUse: CLIFailure?

        func perform<Result>(_ call: DaemonCall<Result>, on connection: DaemonConnection) async throws -> Result {
            do {
                return try await DaemonAccess.perform(call, on: connection)
            } catch let failure as CLIFailure where failure.code == FerryProtocolError.Code.notOwner.rawValue {
                throw inUse ?? failure
            }
        }
    }

    /// ferryd's sessions, or only the one named.
    static func sessions(named name: String?, on connection: DaemonConnection) async throws -> [SessionInfo] {
        let sessions = try await perform(.sessions, on: connection)
        return name.map { name in sessions.filter { $0.sessionIdentifier == name } } ?? sessions
    }

    /// A session's tasks a page at a time, as they arrive.
    static func eachTaskPage(of session: String, on connection: DaemonConnection, _ body: ([TaskInfo]) throws -> Void) async throws {
        do {
            try await connection.eachTaskPage(of: session, body)
        } catch let error as DaemonConnectionError {
            throw failure(error)
        }
    }

    /// Every task of a session, all pages.
    static func tasks(of session: String, on connection: DaemonConnection) async throws -> [TaskInfo] {
        do {
            return try await connection.allTasks(TaskPages(session: session))
        } catch {
            throw failure(error)
        }
    }

    static func failure(_ error: DaemonConnectionError) -> CLIFailure {
        switch error {
        case .unreachable:
            return CLIFailure(exitStatus: ExitStatus.cannotConnect, code: "daemonNotRunning", message: "ferryd is not running")
        case .cannotStartDaemon(let why):
            return CLIFailure(exitStatus: ExitStatus.cannotConnect, code: "cannotStartDaemon", message: "cannot start ferryd: \(why)")
        case .busy:
            return CLIFailure(exitStatus: ExitStatus.cannotConnect, code: "daemonBusy", message: error.description)
        case .refused(let e), .failure(let e):
            return CLIFailure(exitStatus: exitStatus(for: e.code.rawValue), code: e.code.rawValue, message: e.message)
        case .connectionLost, .timedOut:
            return CLIFailure(exitStatus: ExitStatus.failure, code: "connectionLost", message: error.description)
        }
    }

    /// How `ferry` exits for ferryd's error code: 23 when a file cannot be written (a
    /// download's `-o`), else 1.
    static func exitStatus(for code: String) -> Int32 {
        code == FerryProtocolError.Code.cannotWriteToFile.rawValue ? ExitStatus.cannotWrite : ExitStatus.failure
    }

    /// A task argument: a number, the task's identifier in `--session`.
    static func taskIdentifier(_ argument: String) throws -> Int {
        guard let value = Int(argument), value > 0 else {
            throw ValidationError("TASK is a task identifier: a positive number (see `ferry list`)")
        }
        return value
    }
}
