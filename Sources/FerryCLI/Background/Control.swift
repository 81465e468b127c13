import ArgumentParser
import FerryDaemonClient
import FerryProtocol
import Foundation

/// `ferry pause|resume|cancel TASK`: change one task, as the session's owner for a moment, or
/// as a watcher when another process owns it (`DaemonAccess.attachToChange`).
enum TaskCommand {
    static func run(_ control: TaskControl, task: String, options: DaemonOptions, verb: String) async throws {
        do {
            let identifier = try DaemonAccess.taskIdentifier(task)
            let connection = try await DaemonAccess.connect()
            defer { connection.closeNow() }
            let attachment = try await DaemonAccess.attachToChange(options.session, on: connection)
            let info = try await attachment.perform(
                .control(control, TaskReference(sessionIdentifier: options.session, taskIdentifier: identifier)), on: connection).task
            if options.json {
                if let info { JSONOutput.print(info) }
            } else {
                Console.out("task \(identifier) \(verb)" + (info.map { ": now \($0.state.rawValue)" } ?? ""))
            }
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: options.json)
        }
    }
}

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Suspend a task; a download keeps what it has.")
    @Argument(help: "The task identifier (see `ferry list`).") var task: String
    @OptionGroup var options: DaemonOptions
    func run() async throws { try await TaskCommand.run(.suspend, task: task, options: options, verb: "paused") }
}

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a suspended task.")
    @Argument(help: "The task identifier (see `ferry list`).") var task: String
    @OptionGroup var options: DaemonOptions
    func run() async throws { try await TaskCommand.run(.resume, task: task, options: options, verb: "resumed") }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Cancel a task; a download's partial file is deleted (for resume data, cancel it from its app with cancelByProducingResumeData).")
    @Argument(help: "The task identifier (see `ferry list`).") var task: String
    @OptionGroup var options: DaemonOptions
    func run() async throws { try await TaskCommand.run(.cancel, task: task, options: options, verb: "cancelled") }
}

/// `ferry daemon status|stop|install|uninstall`.
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Look at ferryd, stop it, or install it as systemd user units.",
        subcommands: [Status.self, Metrics.self, Stop.self, DaemonInstall.self, DaemonUninstall.self])

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Is ferryd running: version, pid, sessions, tasks. Exits 7 if it is not.")
        @Flag(name: .long, help: "Print JSON on standard output, for scripts.") var json = false

        func run() async throws {
            do {
                let connection = try await DaemonAccess.connect(startsDaemon: false)
                defer { connection.closeNow() }
                let status = try await DaemonAccess.perform(.status, on: connection)
                if json {
                    JSONOutput.print(status)
                    return
                }
                let uptime = ProgressBar.clock(Date().timeIntervalSince(status.startedAt))
                Console.out("ferryd \(status.daemonVersion), pid \(status.pid), up \(uptime)")
                Console.out("  sessions \(status.sessionCount) (\(status.ownedSessionCount) connected), connections \(status.connectionCount)")
                Console.out("  tasks: \(status.runningTaskCount) running, \(status.waitingTaskCount) waiting, \(status.suspendedTaskCount) suspended")
                Console.out("  undelivered events \(status.undeliveredEventCount)")
                if let activity = status.activity {
                    Console.out("  since start: \(activity.attempts) attempts, \(activity.retries) retries, \(activity.completedTasks) completed, "
                                + "\(activity.failedTasks) failed, \(activity.cancelledTasks) cancelled; "
                                + "\(ProgressBar.bytes(activity.bytesReceived)) received, \(ProgressBar.bytes(activity.bytesSent)) sent")
                }
                if let network = status.network {
                    let links = network.links.map { link in
                        link.name + ([link.isCellular ? "cellular" : nil, link.isExpensive ? "expensive" : nil, link.isConstrained ? "constrained" : nil]
                            .compactMap { $0 }.map { " (\($0))" }.joined())
                    }
                    Console.out("  network: \(network.hasDefaultRoute ? "online" : "no default route"); links up: "
                                + "\(links.isEmpty ? "none" : links.joined(separator: ", ")); \(network.isOnMains ? "mains power" : "on battery") (\(network.source))")
                }
                if let rss = status.residentMemoryBytes { Console.out("  memory \(ProgressBar.bytes(rss))") }
                if let socket = status.socketPath { Console.out("  socket \(socket)") }
                if let store = status.storePath { Console.out("  store \(store)") }
            } catch let failure as CLIFailure {
                throw failure.report(url: nil, json: json)
            }
        }
    }

    struct Metrics: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "metrics",
            abstract: "ferryd's figures in the Prometheus text format: tasks by state, bytes moved, retries, events waiting, connections, memory.")

        func run() async throws {
            do {
                let connection = try await DaemonAccess.connect(startsDaemon: false)
                defer { connection.closeNow() }
                Console.outRaw(Data(try await DaemonAccess.perform(.metrics, on: connection).utf8))
            } catch let failure as CLIFailure {
                throw failure.report(url: nil, json: false)
            }
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop",
            abstract: "Stop ferryd gracefully. Tasks stay in its store and continue when it starts again.")
        @Flag(name: .long, help: "Print JSON on standard output, for scripts.") var json = false

        func run() async throws {
            do {
                let connection = try await DaemonAccess.connect(startsDaemon: false)
                try await DaemonAccess.perform(.stop, on: connection)
                // Wait (bounded) for it to close the connection: then it is gone.
                let deadline = ContinuousClock.now + .seconds(15)
                while connection.isConnected, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
                if json { JSONOutput.print(["stopped": !connection.isConnected]) } else { Console.out(connection.isConnected ? "ferryd is still stopping" : "ferryd stopped") }
            } catch let failure as CLIFailure {
                throw failure.report(url: nil, json: json)
            }
        }
    }
}
