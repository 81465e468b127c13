import FerryCore
import FerryDaemonClient
import FerryEngine
import FerryProtocol
import Foundation

/// Runs a background session's tasks in ferryd: each control becomes a request to ferryd,
/// answered before the control returns. The transfer itself runs there; its events come back
/// through the session's ``BackgroundEventRouter``.
struct BackgroundRunner: TaskRunner {
    let link: BackgroundLink

    func reserveTaskIdentifier() throws(FerryError) -> Int? {
        try link.reserveTaskIdentifier()
    }

    /// First run: the task goes into ferryd's store before `resume()` returns. Later ones
    /// (after `suspend()`): ferryd is told to go on.
    func start(_ task: SessionTask, generation: Int, isFirst: Bool) {
        guard isFirst else { return control(task, .resume) }
        do {
            let submission = try submission(for: task)
            let submitted = try link.perform(.submit(submission))
            // ferryd has it under this number, its end still to be delivered (not a task that
            // ended and was delivered before, submitted again with its idempotency key).
            if submitted.task.taskIdentifier == task.taskIdentifier, !(submitted.existing && submitted.task.state.isFinal) {
                task.lock.withLockedValue { $0.isInDaemon = true }
            }
            if let missed = missedControl(of: task, generation: generation) { control(task, missed) }
            guard submitted.existing else { return }
            // ferryd kept the task it had for this key: this one hears what happens to it.
            let existing = submitted.task.taskIdentifier
            task.session.logger.info("submitted again with the same idempotency key; ferryd kept the existing task", metadata: [
                "session": "\(link.sessionIdentifier)", "task": "\(task.taskIdentifier)", "existing": "\(existing)",
            ])
            if existing != task.taskIdentifier {
                task.session.alias(task, to: existing)
                // ferryd sends the existing task's body: a copy spooled for this one is not needed.
                try? FileManager.default.removeItem(at: link.places.uploadBodyFile(session: link.sessionIdentifier, task: task.taskIdentifier))
            }
            if submitted.task.state.isFinal {
                // Already over: its events were delivered before. Say how it ended.
                task.finish(error: Self.outcome(of: submitted.task, url: task.originalRequest.url), generation: generation)
            }
        } catch {
            task.finish(error: FerryError.from(error, url: task.originalRequest.url), generation: generation)
        }
    }

    /// A suspend or cancel that reached ferryd before this task's submission found nothing to
    /// act on there (ferryd answered that it has no such task), and the transfer would run for
    /// nobody: what to tell ferryd now that it has the task. Telling it twice does no harm.
    private func missedControl(of task: SessionTask, generation: Int) -> TaskControl? {
        task.lock.withLockedValue { m in
            switch m.lifecycle.state {
            case .running: nil  // this run, or a later one after a resume: ferryd runs it
            case .canceling, .completed: .cancel
            case .suspended: .suspend
            }
        }
    }

    /// How a task that ended earlier ended, for a new task object with its idempotency key.
    static func outcome(of info: TaskInfo, url: URL) -> FerryError? {
        switch info.state {
        case .completed: nil
        case .cancelled: FerryError(.cancelled, "the task submitted earlier with this idempotency key was cancelled", url: url)
        default:
            FerryError(
                FerryError.Code(named: info.lastError?.code.rawValue ?? "unknown"),
                info.lastError?.message ?? "the task submitted earlier with this idempotency key failed", url: url)
        }
    }

    func suspend(_ task: SessionTask) {
        control(task, .suspend)
    }

    /// Cancels in ferryd, then completes here with `cancelled` (a `failed` event that follows
    /// finds the task already completed and is only acknowledged).
    func cancel(_ task: SessionTask, running: Bool) {
        // Taken before the round trip to ferryd: its own end of the task (the `cancelled` event,
        // or a completion that crossed the cancel) may complete the task meanwhile, and the
        // finish below must then be the stale run's, not a second completion.
        let generation = running ? task.currentGeneration : nil
        if running, generation == nil { return }  // ferryd's end already completed it
        let reference = TaskReference(sessionIdentifier: link.sessionIdentifier, taskIdentifier: task.taskIdentifier)
        var produced: Data?
        do {
            if task.lock.withLockedValue({ $0.lifecycle.cancelProducesResumeData }) {
                produced = try link.perform(.control(.cancelProducingResumeData, reference)).resumeData
            } else {
                _ = try link.perform(.control(.cancel, reference))
            }
        } catch {
            task.session.logger.notice("ferryd did not take the cancel", metadata: [
                "session": "\(link.sessionIdentifier)", "task": "\(task.taskIdentifier)", "error": "\(error.shortDescription)",
            ])
        }
        task.finish(error: task.cancellation(resumeData: produced), generation: generation)
    }

    func invalidate(cancellingTasks: Bool) -> TaskRunnerInvalidation {
        link.invalidate(cancelTasks: cancellingTasks)
        return .tasksGoOnElsewhere
    }

    func shutdown() async {
        await link.disconnect()
    }

    private func control(_ task: SessionTask, _ control: TaskControl) {
        let reference = TaskReference(sessionIdentifier: link.sessionIdentifier, taskIdentifier: task.taskIdentifier)
        do {
            _ = try link.perform(.control(control, reference))
        } catch {
            // The task is ferryd's either way; say so rather than pretend.
            task.session.logger.notice("ferryd did not take the control", metadata: [
                "session": "\(link.sessionIdentifier)", "task": "\(task.taskIdentifier)", "control": "\(control)", "error": "\(error.shortDescription)",
            ])
        }
    }

    /// What ferryd needs to run the task without us: the request with the session's headers,
    /// the body as a file, where a download continues from, the session's limits and policy.
    private func submission(for task: SessionTask) throws -> TaskSubmission {
        let session = task.session
        let transfer = session.transfer(for: task.originalRequest)
        var headers = transfer.request.headers
        // The session's cookies go with the submission; what the response sets is stored
        // when its event arrives (BackgroundEventRouter). Redirects inside ferryd keep these.
        if let cookie = transfer.cookieHeader(for: transfer.request) { headers.add(name: "Cookie", value: cookie) }
        let request = TaskRequest(url: transfer.request.url, method: transfer.request.method, headers: headers)
        let (priority, beginDate, key, description) = task.lock.withLockedValue { m in
            (Double(m.priority), m.earliestBeginDate, m.idempotencyKey, m.taskDescription)
        }
        var submission = TaskSubmission(
            sessionIdentifier: link.sessionIdentifier, taskIdentifier: task.taskIdentifier, kind: task.kind, request: request,
            idempotencyKey: key, priority: priority, earliestBeginDate: beginDate, taskDescription: description)
        submission.timeoutIntervalForResource = session.configuration.timeoutIntervalForResource
        submission.timeoutIntervalForRequest = task.originalRequest.timeoutInterval ?? session.configuration.timeoutIntervalForRequest
        submission.retryPolicy = session.configuration.retryPolicy
        submission.expectedSHA256 = transfer.request.expectedSHA256?.lowercased()
        if let storage = session.configuration.urlCredentialStorage {
            let credentials = storage.taskCredentials(for: transfer.request.url).prefix(TaskSubmission.maximumCredentials)
            if !credentials.isEmpty { submission.credentials = Array(credentials) }
        }
        switch task.kind {
        case .download:
            // ferryd places the file in the session's container and says where when done.
            submission.resumeData = task.daemonResumeData
        case .upload, .data:
            // A data task with a body is an upload to ferryd: bodies travel as files.
            let body = task.uploadBody ?? task.originalRequest.body.flatMap { $0.isEmpty ? nil : UploadBody.data($0) }
            if let body {
                submission.kind = .upload
                submission.bodyFile = try bodyFile(for: body, task: task).path
            }
        }
        try submission.validate()
        return submission
    }

    /// Bodies go to ferryd as files: a file as it is, `Data` written into the container first
    /// (as the platform does; ferryd deletes it when the task ends), a stream refused (it
    /// cannot outlive this process).
    private func bodyFile(for body: UploadBody, task: SessionTask) throws -> URL {
        let url = task.originalRequest.url
        if let file = body.fileURL {
            guard FileManager.default.isReadableFile(atPath: file.path) else {
                throw FerryError(.fileDoesNotExist, "the upload file \(file.path) does not exist or cannot be read", url: url)
            }
            return file.standardizedFileURL
        }
        if let data = body.inMemoryData {
            let file = link.places.uploadBodyFile(session: link.sessionIdentifier, task: task.taskIdentifier)
            do {
                try link.places.prepareFolder(of: file)
                try data.write(to: file, options: [.atomic])
            } catch {
                throw FerryError(.cannotWriteToFile, "cannot write the upload body into the session's container at \(file.path)", url: url, underlying: error)
            }
            return file
        }
        throw FerryError(.unsupportedURL, "a background session uploads from a file or Data, not a stream: the stream cannot outlive this process", url: url)
    }
}
