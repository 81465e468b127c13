import ArgumentParser
import FerryDaemonClient
import FerryProtocol
import Foundation

/// `ferry list`: every session and its tasks, as a watcher (no session changes owner).
struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List ferryd's sessions and their tasks: state, bytes, errors.")

    @Option(name: .long, help: "Only this session.") var session: String?
    @Flag(name: .long, help: "Print JSON on standard output, for scripts.") var json = false

    /// Pages through each session's tasks and prints them as they come (one page in memory,
    /// however many tasks ferryd holds). `--json` writes one array of
    /// `{"session": SessionInfo, "tasks": [TaskInfo]}`, piece by piece.
    func run() async throws {
        // With --json: what closes the document written so far, should the listing fail midway
        // (then the error goes to stderr alone, and stdout still holds one JSON document).
        var closing = ""
        do {
            let connection = try await DaemonAccess.connect()
            defer { connection.closeNow() }
            let sessions = try await DaemonAccess.sessions(named: session, on: connection)
            if json {
                Console.outRaw(Data("[".utf8))
                closing = "]\n"
            }
            if sessions.isEmpty, !json { Console.out("no sessions") }
            for (index, info) in sessions.enumerated() {
                _ = try await DaemonAccess.attach(info.sessionIdentifier, owner: false, on: connection)
                if json {
                    // {"session":…,"tasks":[…]}: the keys in the order sortedKeys gives them.
                    let head = JSONOutput.encoded(info).map { String(decoding: $0, as: UTF8.self) } ?? "null"
                    Console.outRaw(Data("\(index > 0 ? "," : ""){\"session\":\(head),\"tasks\":[".utf8))
                    closing = "]}]\n"
                } else {
                    Console.out("\(info.sessionIdentifier)  app \(info.appBundleIdentifier)\(info.sharedContainerIdentifier.map { "  group \($0)" } ?? "")"
                                + "  \(info.isOwned ? "connected" : "not connected")  \(info.taskCount) tasks  \(info.undeliveredEventCount) undelivered events"
                                + (info.keepsEvents == false ? " (not kept for a later owner)" : ""))
                }
                var first = true
                try await DaemonAccess.eachTaskPage(of: info.sessionIdentifier, on: connection) { tasks in
                    if json {
                        let items = tasks.compactMap { JSONOutput.encoded($0).map { String(decoding: $0, as: UTF8.self) } }
                        guard !items.isEmpty else { return }
                        Console.outRaw(Data(((first ? "" : ",") + items.joined(separator: ",")).utf8))
                        first = false
                    } else {
                        for task in tasks { Console.out("  " + TaskLine.render(task)) }
                    }
                }
                if json {
                    Console.outRaw(Data("]}".utf8))
                    closing = "]\n"
                }
            }
            if json { Console.outRaw(Data("]\n".utf8)) }
        } catch let failure as CLIFailure {
            guard closing.isEmpty else {
                Console.outRaw(Data(closing.utf8))
                throw failure.report(url: nil, json: false)
            }
            throw failure.report(url: nil, json: json)
        }
    }
}

/// `ferry watch`: live progress of every session's tasks, as a watcher.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Show live progress of ferryd's tasks without owning any session.",
        discussion: "Runs until interrupted, or until no task is waiting or running with --until-idle.")

    @Option(name: .long, help: "Only this session.") var session: String?
    @Flag(name: .long, help: "Exit once no task is waiting, running or suspended.") var untilIdle = false
    @Flag(name: .long, help: "One JSON object per progress report, for scripts.") var json = false

    func run() async throws {
        do {
            let connection = try await DaemonAccess.connect()
            defer { connection.closeNow() }
            let sessions = try await DaemonAccess.sessions(named: session, on: connection)
            var active: [String: [Int: TaskInfo]] = [:]
            for info in sessions {
                let attached = try await DaemonAccess.attach(info.sessionIdentifier, owner: false, on: connection)
                _ = attached
                for task in try await DaemonAccess.tasks(of: info.sessionIdentifier, on: connection) where !task.state.isFinal {
                    active[info.sessionIdentifier, default: [:]][task.taskIdentifier] = task
                }
            }
            if untilIdle, active.values.allSatisfy(\.isEmpty) { return }
            var lastPoll = ContinuousClock.now
            for await message in connection.pushedMessages {
                if case .progress(let progress) = message {
                    if json {
                        JSONOutput.print(progress)
                    } else {
                        let done = progress.bytesSent + progress.bytesReceived
                        let total = (progress.bytesExpectedToSend ?? 0) + (progress.bytesExpectedToReceive ?? 0)
                        let percent = total > 0 ? String(format: " %3d%%", Int(Double(done) * 100 / Double(total))) : ""
                        Console.out("\(progress.sessionIdentifier) #\(progress.taskIdentifier)\(percent)  \(ProgressBar.bytes(done))"
                                    + (total > 0 ? " / \(ProgressBar.bytes(total))" : ""))
                    }
                }
                // States are not pushed to watchers; look again now and then.
                if untilIdle, ContinuousClock.now - lastPoll > .milliseconds(500) {
                    lastPoll = .now
                    if try await allFinished(Array(active.keys), connection) { return }
                }
            }
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: json)
        }
    }

    private func allFinished(_ sessions: [String], _ connection: DaemonConnection) async throws -> Bool {
        for session in sessions where try await DaemonAccess.tasks(of: session, on: connection).contains(where: { !$0.state.isFinal }) {
            return false
        }
        return true
    }
}

/// `ferry explain TASK`: why a task is not moving, and when it next tries.
struct Explain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Say why a task is not moving (begin date, backoff after an error, Retry-After, limits, no network or a link its session does not allow) and when it next tries.")

    @Argument(help: "The task identifier (see `ferry list`).") var task: String
    @OptionGroup var options: DaemonOptions

    func run() async throws {
        do {
            let identifier = try DaemonAccess.taskIdentifier(task)
            let connection = try await DaemonAccess.connect()
            defer { connection.closeNow() }
            _ = try await DaemonAccess.attach(options.session, owner: false, on: connection)
            let page = try await DaemonAccess.perform(.tasks(of: options.session, after: identifier - 1, limit: 1), on: connection)
            guard let info = page.tasks.first, info.taskIdentifier == identifier else {
                throw CLIFailure(exitStatus: ExitStatus.failure, code: "unknownTask", message: "session \(options.session) has no task \(identifier)")
            }
            if options.json {
                JSONOutput.print(info)
            } else {
                Console.out(TaskLine.render(info))
                Console.out(TaskLine.explanation(info))
            }
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: options.json)
        }
    }
}

/// One task as a line a person reads.
enum TaskLine {
    static func render(_ task: TaskInfo) -> String {
        var parts = ["#\(task.taskIdentifier)", task.kind.rawValue, state(task), "\(task.request.method) \(Redact.url(task.request.url.absoluteString))"]
        if task.kind == .upload {
            parts.append("sent \(ProgressBar.bytes(task.bytesSent))" + (task.bytesExpectedToSend.map { " / \(ProgressBar.bytes($0))" } ?? ""))
        } else {
            parts.append("received \(ProgressBar.bytes(task.bytesReceived))" + (task.bytesExpectedToReceive.map { " / \(ProgressBar.bytes($0))" } ?? ""))
        }
        if let delivered = task.deliveredTo {
            parts.append("→ \(delivered)")
        } else if let target = task.deliverTo, !task.state.isFinal {
            parts.append("for \(target)")
        }
        if task.attemptCount > 1 { parts.append("attempt \(task.attemptCount)") }
        if let error = task.lastError { parts.append("last error \(error.code.rawValue): \(error.message)") }
        if let description = task.taskDescription { parts.append("\"\(description)\"") }
        return parts.joined(separator: "  ")
    }

    /// ferryd's state, except that an HTTP error answer is shown as what it is to a person: a
    /// failure (to ferryd and to an app it is a completed task with a response, as on the platform).
    static func state(_ task: TaskInfo) -> String {
        guard task.state == .completed, let status = task.responseStatus, status >= 400 else { return task.state.rawValue }
        return "failed (HTTP \(status))"
    }

    static func explanation(_ task: TaskInfo) -> String {
        if task.state.isFinal { return "it is \(state(task)): it will not run again" }
        if task.state == .running { return task.waitingReason.map { "it is running; it \($0.message)" } ?? "it is running now" }
        var text = task.waitingReason.map { $0.message } ?? "it is \(task.state.rawValue)"
        if let next = task.nextAttemptDate ?? task.waitingReason?.until {
            let seconds = next.timeIntervalSinceNow
            text += seconds > 0 ? "; next try in \(ProgressBar.clock(seconds)) (\(ISO8601DateFormatter().string(from: next)))" : "; it may start now"
        }
        return text
    }
}
