import FerryCore
import FerryEngine
import FerryProtocol
import Foundation

/// A background task's controls: each becomes a request to ferryd, answered before the
/// control returns. The transfer itself runs in ferryd; its events come back through the
/// session's ``BackgroundEventRouter``.
extension SessionTask {
    enum BackgroundControl { case suspend, resume }

    /// First `resume()`: the task goes into ferryd's store before this returns. Later ones
    /// (after `suspend()`): ferryd is told to go on.
    func backgroundStart(_ link: BackgroundLink, generation: Int) {
        let alreadySubmitted = lock.withLockedValue { $0.submittedToDaemon }
        if alreadySubmitted {
            backgroundControl(link, .resume)
            return
        }
        do {
            let submission = try backgroundSubmission(link)
            guard case .submitted(let submitted) = try link.call(.submit(submission)) else {
                throw FerryError(.unknown, "ferryd answered the submission with something else")
            }
            lock.withLockedValue { $0.submittedToDaemon = true }
            if submitted.existing {
                // ferryd kept the task it had for this key: this one hears what happens to it.
                let existing = submitted.task.taskIdentifier
                session.logger.info("submitted again with the same idempotency key; ferryd kept the existing task",
                                    metadata: ["session": "\(link.sessionIdentifier)", "task": "\(taskIdentifier)", "existing": "\(existing)"])
                if existing != taskIdentifier {
                    session.alias(self, to: existing)
                    // ferryd sends the existing task's body: a copy spooled for this one is not needed.
                    try? FileManager.default.removeItem(at: link.places.uploadBodyFile(session: link.sessionIdentifier, task: taskIdentifier))
                }
                if submitted.task.state.isFinal {
                    // Already over: its events were delivered before. Say how it ended.
                    let error: FerryError? = switch submitted.task.state {
                    case .completed: nil
                    case .cancelled: FerryError(.cancelled, "the task submitted earlier with this idempotency key was cancelled", url: originalRequest.url)
                    default: FerryError(FerryError.Code(named: submitted.task.lastError?.code.rawValue ?? "unknown"),
                                        submitted.task.lastError?.message ?? "the task submitted earlier with this idempotency key failed", url: originalRequest.url)
                    }
                    finish(error: error, generation: generation)
                }
            }
        } catch {
            finish(error: FerryError.from(error, url: originalRequest.url), generation: generation)
        }
    }

    func backgroundControl(_ link: BackgroundLink, _ control: BackgroundControl) {
        let reference = TaskReference(sessionIdentifier: link.sessionIdentifier, taskIdentifier: taskIdentifier)
        do {
            _ = try link.call(control == .suspend ? .suspend(reference) : .resume(reference))
        } catch {
            // The task is ferryd's either way; say so rather than pretend.
            session.logger.notice("ferryd did not take the control", metadata: [
                "session": "\(link.sessionIdentifier)", "task": "\(taskIdentifier)", "control": "\(control)", "error": "\(error.shortDescription)",
            ])
        }
    }

    /// Cancels in ferryd, then completes here with `cancelled` (a `failed` event that follows
    /// finds the task already completed and is only acknowledged).
    func backgroundCancel(_ link: BackgroundLink, afterStop: Bool, resumeData: Data? = nil) {
        let reference = TaskReference(sessionIdentifier: link.sessionIdentifier, taskIdentifier: taskIdentifier)
        var produced = resumeData
        do {
            if lock.withLockedValue({ $0.cancelledForResumeData }) {
                if case .resumeData(let reply) = try link.call(.cancelProducingResumeData(reference)) { produced = reply.resumeData }
            } else {
                _ = try link.call(.cancel(reference))
            }
        } catch {
            session.logger.notice("ferryd did not take the cancel", metadata: [
                "session": "\(link.sessionIdentifier)", "task": "\(taskIdentifier)", "error": "\(error.shortDescription)",
            ])
        }
        let error = FerryError(.cancelled, "the task was cancelled", url: originalRequest.url, resumeData: produced)
        finish(error: error, generation: afterStop ? currentGeneration : nil)
    }

    /// What ferryd needs to run this task without us: the request with the session's headers,
    /// the body as a file, where a download goes.
    private func backgroundSubmission(_ link: BackgroundLink) throws -> TaskSubmission {
        let transfer = session.transfer(for: originalRequest)
        let request = TaskRequest(
            url: transfer.request.url, method: transfer.request.method,
            headers: transfer.request.headers)
        let (priority, beginDate, key, description) = lock.withLockedValue { m in
            (Double(m.priority), m.earliestBeginDate, m.idempotencyKey, m.taskDescription)
        }
        var submission = TaskSubmission(
            sessionIdentifier: link.sessionIdentifier, taskIdentifier: taskIdentifier, kind: .data, request: request,
            idempotencyKey: key, priority: priority, earliestBeginDate: beginDate, taskDescription: description)
        submission.timeoutIntervalForResource = session.configuration.timeoutIntervalForResource
        submission.timeoutIntervalForRequest = originalRequest.timeoutInterval ?? session.configuration.timeoutIntervalForRequest
        submission.retryPolicy = session.configuration.retryPolicy
        switch self {
        case let download as DownloadTask:
            // ferryd places the file in the session's container and says where when done.
            submission.kind = .download
            submission.resumeData = download.daemonResumeData
        case let upload as UploadTask:
            submission.kind = .upload
            submission.bodyFile = try backgroundBodyFile(for: upload.body, link: link).path
        default:
            if let body = originalRequest.body, !body.isEmpty {
                submission.kind = .upload
                submission.bodyFile = try backgroundBodyFile(for: .data(body), link: link).path
            }
        }
        try submission.validate()
        return submission
    }

    /// Bodies go to ferryd as files: a file as it is, `Data` written into the container first
    /// (as the platform does), a stream refused (it cannot outlive this process).
    private func backgroundBodyFile(for body: UploadBody, link: BackgroundLink) throws -> URL {
        if let file = body.fileURL {
            guard FileManager.default.isReadableFile(atPath: file.path) else {
                throw FerryError(.fileDoesNotExist, "the upload file \(file.path) does not exist or cannot be read", url: originalRequest.url)
            }
            return file.standardizedFileURL
        }
        if let data = body.inMemoryData {
            let file = link.places.uploadBodyFile(session: link.sessionIdentifier, task: taskIdentifier)
            do {
                try link.places.prepareFolder(of: file)
                try data.write(to: file, options: [.atomic])
            } catch {
                throw FerryError(.cannotWriteToFile, "cannot write the upload body into the session's container at \(file.path)", url: originalRequest.url, underlying: error)
            }
            return file
        }
        throw FerryError(.unsupportedURL, "a background session uploads from a file or Data, not a stream: the stream cannot outlive this process", url: originalRequest.url)
    }
}
