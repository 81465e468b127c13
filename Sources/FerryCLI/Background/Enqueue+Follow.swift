import FerryCore
import FerryDaemonClient
import FerryProtocol
import Foundation

// `--wait`: staying with a submitted task until it ends, as the session's owner (its events
// come here) or as a watcher (while another process owns a session of no app).
extension Enqueue {
    /// How a followed task ended.
    struct Outcome {
        var status: Int?
        /// The server's response body (an upload's, a data task's); only an owner gets it.
        var body: Data?
        /// Where the downloaded file is: where ferryd delivered it.
        var location: String?
        var failure: TransferFailure?
    }

    /// Takes the task's events until its last one, acknowledging each after it was handled
    /// (the file of an error page, still in ferryd's folder, goes with its event).
    static func follow(_ task: TaskInfo, on connection: DaemonConnection, quiet: Bool) async throws -> Outcome {
        let bar = ProgressBar(label: "#\(task.taskIdentifier)", enabled: !quiet)
        defer { bar.stop() }
        var outcome = Outcome()
        var body = Data()
        for await message in connection.pushedMessages {
            guard case .event(let event) = message else {
                show(message, of: task, on: bar)
                continue
            }
            var last = false
            if event.taskIdentifier == task.taskIdentifier {
                switch event.kind {
                case .response(let head): outcome.status = head.statusCode
                case .data(let bytes): body.append(bytes)
                case .downloadFinished(let finished):
                    // An error page is not delivered: it stays in ferryd's folder, deleted with the event.
                    if let status = outcome.status, status < 400 { outcome.location = finished.location }
                case .completed:
                    outcome.body = body
                    last = true
                case .failed(let failure):
                    outcome.failure = failure
                    last = true
                }
            }
            try? await connection.perform(.acknowledge(Acknowledge(sessionIdentifier: event.sessionIdentifier, upToSequence: event.sequence)))
            if last { return outcome }
        }
        throw connectionLost
    }

    /// As a watcher: progress as it comes, and the task's state looked up every 200 ms until
    /// it is final (a watcher gets no events). The response body went to the owner.
    static func watch(_ task: TaskInfo, on connection: DaemonConnection, quiet: Bool) async throws -> Outcome {
        let bar = ProgressBar(label: "#\(task.taskIdentifier)", enabled: !quiet)
        defer { bar.stop() }
        let finished = try await withThrowingTaskGroup(of: TaskInfo?.self) { group in
            group.addTask {
                for await message in connection.pushedMessages { show(message, of: task, on: bar) }
                return nil  // the connection ended, or the wait is over
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: .milliseconds(200))
                    let page = try await DaemonAccess.perform(.tasks(of: task.sessionIdentifier, after: task.taskIdentifier - 1, limit: 1), on: connection)
                    guard let now = page.tasks.first, now.taskIdentifier == task.taskIdentifier else {
                        throw CLIFailure(exitStatus: ExitStatus.failure, code: "unknownTask", message: "task \(task.taskIdentifier) is gone from ferryd")
                    }
                    if now.state.isFinal { return now }
                }
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let next { return next }
            }
            throw connectionLost
        }
        var outcome = Outcome(finished: finished)
        if finished.kind != .download, finished.state == .completed, !quiet {
            Console.error("ferry: the server's response went to the process that owns session \(finished.sessionIdentifier) (another --wait)")
        }
        outcome.body = nil
        return outcome
    }

    /// A progress report of `task`, on the bar.
    private static func show(_ message: DaemonMessage, of task: TaskInfo, on bar: ProgressBar) {
        guard case .progress(let p) = message, p.taskIdentifier == task.taskIdentifier, p.sessionIdentifier == task.sessionIdentifier else { return }
        let (done, total) = task.kind == .upload ? (p.bytesSent, p.bytesExpectedToSend ?? 0) : (p.bytesReceived, p.bytesExpectedToReceive ?? 0)
        bar.update(done: done, total: total)
    }

    private static var connectionLost: CLIFailure {
        CLIFailure(exitStatus: ExitStatus.failure, code: "connectionLost", message: "ferryd closed the connection before the task ended; it goes on there (`ferry list`)")
    }
}

extension Enqueue.Outcome {
    /// How a task ferryd reports as final ended, from the task alone (no events).
    init(finished task: TaskInfo) {
        self.init(status: task.responseStatus, body: nil, location: task.deliveredTo)
        if task.state != .completed {
            let error = task.lastError ?? FerryProtocolError(FerryProtocolError.Code(rawValue: task.state.rawValue), "the task \(task.state.rawValue)")
            failure = TransferFailure(code: error.code.rawValue, message: error.message)
        }
    }
}
