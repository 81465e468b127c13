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
        /// Where the download is (or will be) delivered.
        var destination: String?
        /// With `--wait`: the server's HTTP status, and what went wrong when the task failed.
        var status: Int?
        var error: ErrorReport.Body?
    }

    /// Submits the task and prints it. Without `wait` it leaves at once: ferryd carries the
    /// task (and delivers a download to its `deliverTo`). With `wait` it stays until the task
    /// ends, showing progress (`follow`).
    ///
    /// It submits as the session's owner, or, while another process owns a session of no app
    /// (a `--wait` in another shell owns `ferry.cli`), as a watcher: ferryd lets a watcher
    /// submit there (`DaemonAccess.attachToChange`).
    static func submit(_ submission: TaskSubmission, options: DaemonOptions, wait: Bool = false) async throws {
        do {
            try submission.validate()
        } catch {
            throw ValidationError(error.message)
        }
        let connection = try await DaemonAccess.connect()
        defer { connection.closeNow() }
        let attachment = try await DaemonAccess.attachToChange(submission.sessionIdentifier, on: connection)
        let submitted = try await attachment.perform(.submit(submission), on: connection)
        let task = submitted.task
        if !wait {
            if options.json {
                JSONOutput.print(Submitted(session: task.sessionIdentifier, task: task.taskIdentifier, existing: submitted.existing,
                                           state: task.state.rawValue, destination: task.deliveredTo ?? task.deliverTo))
            } else {
                Console.out("\(task.taskIdentifier)")
                Console.error("ferry: task \(task.taskIdentifier) in session \(task.sessionIdentifier) is with ferryd"
                              + (submitted.existing ? " (it already had this key)" : "")
                              + ((task.deliveredTo ?? task.deliverTo).map { "; the file will be \($0)" } ?? "")
                              + "; `ferry list` shows it")
            }
            return
        }
        let outcome: Outcome
        if task.state.isFinal {
            outcome = Outcome(finished: task)  // an existing task (`--key`) that already ended
        } else if attachment.owns {
            outcome = try await follow(task, on: connection, quiet: options.json)
        } else {
            outcome = try await watch(task, on: connection, quiet: options.json)
        }
        try report(outcome, of: submitted, json: options.json)
    }

    /// Prints how a followed task ended: the response body (or, with `--json`, one document),
    /// and exits as the task ended (22 for an HTTP error status, 1 for a failure).
    private static func report(_ outcome: Outcome, of submitted: FerryProtocol.Submitted, json: Bool) throws {
        let task = submitted.task
        let failure = outcome.failure.map { CLIFailure(exitStatus: DaemonAccess.exitStatus(for: $0.code), code: $0.code, message: $0.message) }
            ?? outcome.status.flatMap { $0 >= 400 ? CLIFailure.http($0) : nil }
        guard json else {
            if let body = outcome.body, !body.isEmpty { Console.outRaw(body) }
            if let failure { throw failure }
            if let location = outcome.location { Console.error("ferry: the file is \(location)") }
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
            ferryd puts the finished file at -o, or under the URL's file name in the current
            directory, with or without --wait. It never replaces a file: if the name is taken
            when the download completes, the file is named 'name (1).ext' (the first free
            number); `ferry list` shows where it went. A folder that is missing or not
            writable, or an -o that is a folder, is refused at once (exit 23). An HTTP error
            status is a failed task and writes nothing there. ferryd continues a download
            with Range/If-Range after a lost connection or a restart; if the resource changed
            meanwhile it starts over, never splicing two versions.
            """)

    @Argument(help: "The http or https URL to download.") var url: String
    @Option(name: [.customShort("o"), .long], help: "Where ferryd puts the file once it is complete (default: the URL's file name here).") var output: String?
    @Flag(name: .long, help: "Stay until the download ends, with progress.") var wait = false
    @OptionGroup var enqueue: EnqueueOptions
    @OptionGroup var options: DaemonOptions

    func validate() throws {
        _ = try Check.url(url)
    }

    func run() async throws {
        do {
            let source = try Check.url(url)
            let name = Check.defaultFileName(for: source)  // never a path, even from %2F
            let request = TaskRequest(url: source, method: "GET", headers: try Check.headers(enqueue.header))
            var submission = TaskSubmission(
                sessionIdentifier: options.session, kind: .download, request: request,
                idempotencyKey: enqueue.key, priority: enqueue.priority, earliestBeginDate: enqueue.beginDate)
            // ferryd writes it in its own folder while it runs, then moves it here (and checks now that it can).
            submission.deliverTo = Enqueue.absolute(output ?? name)
            try await Enqueue.submit(submission, options: options, wait: wait)
        } catch let failure as CLIFailure {
            throw failure.report(url: url, json: options.json)
        }
    }
}
