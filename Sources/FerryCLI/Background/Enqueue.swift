import FerryCore
import ArgumentParser
import FerryDaemonClient
import FerryProtocol
import Foundation

/// `ferry upload FILE URL` and `ferry download URL`: hand a transfer to ferryd and return.
struct Enqueue {
    struct Submitted: Encodable {
        var session: String
        var task: Int
        var existing: Bool
        var state: String
        var destination: String?
        /// With `--wait`: the server's HTTP status, and what went wrong when the task failed.
        var status: Int?
        var error: ErrorReport.Body?
    }

    /// Submits as the session's owner and prints the task. Without `wait` it leaves at once:
    /// ferryd carries the task. With `wait` it stays the session's owner until the task ends,
    /// showing progress; a finished download is moved to `moveTo`.
    static func submit(_ submission: TaskSubmission, options: DaemonOptions, wait: Bool = false, moveTo: String? = nil) async throws {
        do {
            try submission.validate()
        } catch {
            throw ValidationError(error.message)
        }
        let connection = try await DaemonAccess.connect()
        defer { connection.closeNow() }
        _ = try await DaemonAccess.attach(submission.sessionIdentifier, owner: true, on: connection)
        let submitted = try await DaemonAccess.perform(.submit(submission), on: connection)
        let task = submitted.task
        if !wait {
            if options.json {
                JSONOutput.print(Submitted(session: task.sessionIdentifier, task: task.taskIdentifier, existing: submitted.existing,
                                           state: task.state.rawValue, destination: submission.destination))
            } else {
                Console.out("\(task.taskIdentifier)")
                Console.error("ferry: task \(task.taskIdentifier) in session \(task.sessionIdentifier) is with ferryd"
                              + (submitted.existing ? " (it already had this key)" : "")
                              + (submission.destination.map { "; the file will be \($0)" } ?? "")
                              + "; `ferry list` shows it")
            }
            return
        }
        let outcome = try await follow(task, on: connection, quiet: options.json, moveTo: moveTo)
        let failure = outcome.failure.map { CLIFailure(exitStatus: ExitStatus.failure, code: $0.code, message: $0.message) }
            ?? outcome.status.flatMap { $0 >= 400 ? CLIFailure.http($0) : nil }
        guard options.json else {
            if let body = outcome.body, !body.isEmpty { Console.outRaw(body) }
            if let failure { throw failure }
            return
        }
        // One JSON document, the failure inside it; the exit code still says what happened.
        JSONOutput.print(Submitted(
            session: task.sessionIdentifier, task: task.taskIdentifier, existing: submitted.existing,
            state: failure == nil ? "completed" : "failed", destination: outcome.location, status: outcome.status,
            error: failure.map { ErrorReport.Body(code: $0.code, message: $0.message, status: $0.status, url: nil, exitCode: $0.exitStatus) }))
        if let failure {
            Console.error("ferry: \(failure.message)")
            throw ExitCode(failure.exitStatus)
        }
    }

    struct Outcome {
        var status: Int?
        var body: Data?
        var location: String?
        var failure: TransferFailure?
    }

    /// Takes the task's events until its last one, acknowledging each after it was handled:
    /// ferryd deletes a finished download once its event is acknowledged, so the file is moved
    /// to `moveTo` first (an error page is deleted instead, as `ferry get` does).
    static func follow(_ task: TaskInfo, on connection: DaemonConnection, quiet: Bool, moveTo: String?) async throws -> Outcome {
        let bar = ProgressBar(label: "#\(task.taskIdentifier)", enabled: !quiet)
        defer { bar.stop() }
        var outcome = Outcome()
        var body = Data()
        for await message in connection.pushedMessages {
            guard case .event(let event) = message else {
                if case .progress(let p) = message, p.taskIdentifier == task.taskIdentifier {
                    let (done, total) = task.kind == .upload ? (p.bytesSent, p.bytesExpectedToSend ?? 0) : (p.bytesReceived, p.bytesExpectedToReceive ?? 0)
                    bar.update(done: done, total: total)
                }
                continue
            }
            var last = false
            if event.taskIdentifier == task.taskIdentifier {
                switch event.kind {
                case .response(let head): outcome.status = head.statusCode
                case .data(let bytes): body.append(bytes)
                case .downloadFinished(let finished):
                    outcome.location = try place(finished.location, moveTo: moveTo, status: outcome.status)
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
        throw CLIFailure(exitStatus: ExitStatus.failure, code: "connectionLost", message: "ferryd closed the connection before the task ended; it goes on there (`ferry list`)")
    }

    /// Where a finished download ends up: moved to `moveTo`, or nowhere for an HTTP error.
    private static func place(_ file: String, moveTo: String?, status: Int?) throws -> String? {
        if let status, status >= 400 {
            try? FileManager.default.removeItem(atPath: file)
            return nil
        }
        guard let moveTo else { return file }
        do {
            try? FileManager.default.removeItem(atPath: moveTo)
            try FileManager.default.moveItem(atPath: file, toPath: moveTo)
            return moveTo
        } catch {
            throw CLIFailure(exitStatus: ExitStatus.cannotWrite, code: "cannotWriteToFile", message: "cannot move the download from \(file) to \(moveTo): \(error.localizedDescription)")
        }
    }

    static func absolute(_ path: String) -> String {
        let url = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true))
        return url.standardizedFileURL.path
    }
}

/// Options an enqueued task may carry.
struct EnqueueOptions: ParsableArguments {
    @Option(name: [.customShort("H"), .long], help: "An extra request header, 'Name: value' (repeatable).")
    var header: [String] = []

    @Option(name: .long, help: "A key of yours: submitting the same key again returns the existing task.")
    var key: String?

    @Option(name: .long, help: "Priority between 0 and 1 (default 0.5).")
    var priority: Double = 0.5

    @Option(name: .long, help: "Do not start before this many seconds from now.")
    var after: Double?

    var beginDate: Date? { after.map { Date().addingTimeInterval($0) } }
}

struct Upload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Hand an upload to ferryd and return at once; print the task id.",
        discussion: """
            The file is read by ferryd when it runs the task, so leave it in place until the
            task completes. ferryd retries lost connections (and 429/503 with Retry-After)
            and continues from the server's offset when the server speaks resumable uploads.
            """)

    @Argument(help: "The file to upload.") var file: String
    @Argument(help: "The http or https URL to upload to.") var url: String
    @Option(name: [.customShort("X"), .long], help: "The HTTP method (default PUT).") var method: String = "PUT"
    @Flag(name: .long, help: "Stay until the upload ends, with progress; print the server's response.") var wait = false
    @OptionGroup var enqueue: EnqueueOptions
    @OptionGroup var options: DaemonOptions

    func validate() throws {
        _ = try Check.url(url)
        let path = Enqueue.absolute(file)
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CLIFailure(exitStatus: ExitStatus.cannotRead, code: "fileDoesNotExist", message: "cannot read \(file)").report(url: nil, json: options.json)
        }
    }

    func run() async throws {
        do {
            let request = TaskRequest(url: try Check.url(url), method: method.uppercased(), headers: try Check.headers(enqueue.header))
            let submission = TaskSubmission(
                sessionIdentifier: options.session, kind: .upload, request: request, bodyFile: Enqueue.absolute(file),
                idempotencyKey: enqueue.key, priority: enqueue.priority, earliestBeginDate: enqueue.beginDate)
            try await Enqueue.submit(submission, options: options, wait: wait)
        } catch let failure as CLIFailure {
            throw failure.report(url: url, json: options.json)
        }
    }
}

struct Download: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Hand a download to ferryd and return at once; print the task id.",
        discussion: """
            ferryd writes the file into the session's folder under Ferry's data directory
            (session-files/<session>/cli-downloads/, the path is printed); with --wait it is
            moved to -o, or to the URL's file name in the current directory, once complete.
            ferryd continues it with Range/If-Range after a lost connection or a restart; if
            the resource changed meanwhile it starts over, never splicing two versions.
            """)

    @Argument(help: "The http or https URL to download.") var url: String
    @Option(name: [.customShort("o"), .long], help: "With --wait: where to put the file once it is complete.") var output: String?
    @Flag(name: .long, help: "Stay until the download ends, with progress, then move it to -o (default: the URL's file name here).") var wait = false
    @OptionGroup var enqueue: EnqueueOptions
    @OptionGroup var options: DaemonOptions

    func validate() throws {
        _ = try Check.url(url)
        if output != nil, !wait {
            throw ValidationError("-o needs --wait: without it ferryd keeps the file in its container (the path is printed)")
        }
    }

    func run() async throws {
        do {
            let source = try Check.url(url)
            let name = Check.defaultFileName(for: source)  // never a path, even from %2F
            // ferryd writes only inside the session's container; the file is moved out with --wait.
            // Not in ferryd's own downloads/ folder, whose files it deletes once handed over:
            // without --wait nobody moves this one, and it stays where we said it would be.
            let container = try DaemonAccess.paths().sessionFiles(options.session)
            let destination = container.appendingPathComponent("cli-downloads/\(UUID().uuidString.prefix(8))-\(name)").path
            let request = TaskRequest(url: source, method: "GET", headers: try Check.headers(enqueue.header))
            let submission = TaskSubmission(
                sessionIdentifier: options.session, kind: .download, request: request, destination: destination,
                idempotencyKey: enqueue.key, priority: enqueue.priority, earliestBeginDate: enqueue.beginDate)
            try await Enqueue.submit(submission, options: options, wait: wait, moveTo: wait ? Enqueue.absolute(output ?? name) : nil)
        } catch let failure as CLIFailure {
            throw failure.report(url: url, json: options.json)
        }
    }
}
