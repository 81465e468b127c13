import FerryCore
import FerryEngine
import FerryProtocol
import FerryStore
import Foundation
import Logging

/// Session records read once per scheduling pass or batch of submissions: many tasks of one
/// session need its record, and it does not change within one.
struct SessionLookup {
    private var records: [String: SessionRecord?] = [:]

    /// The session's record (nil when there is none), read from `store` the first time.
    mutating func record(_ identifier: String, in store: FerryStore) async throws -> SessionRecord? {
        if let known = records[identifier] { return known }
        let record = try await store.session(identifier)
        records[identifier] = record
        return record
    }
}

/// Why a running transfer is being stopped by ferryd rather than ending on its own.
enum StopReason: Sendable {
    case suspend, cancel, shutdown
    /// The link its connection left by went down, or nothing routes to its host any more.
    case routeLost
}

/// A task holding a slot: its host (for the per-host limit) and the control of its attempt.
struct RunningTask: Sendable {
    var session: String
    var host: String
    /// The link the network reading routed its host over when it started (nil without a
    /// reading, or over loopback): when that link goes down, its connection is dead too.
    var link: String?
    var attempt = StopControl()
    var stop: StopReason?
    /// The transfer succeeded and its outcome is being stored (a download delivered, events
    /// written): stopping it now could leave a delivered file without its completion.
    var completing = false
}

extension Daemon {
    /// Starts what may start, then sleeps until the next begin date or retry time, or until
    /// woken (a submission, a finished task, a resumed one).
    func schedulerLoop() async {
        var lastCleanup: Date?
        // Until cancelled (the service's shutdown); once ferryd is stopping it starts nothing.
        while !Task.isCancelled {
            guard !isStopping else {
                await wakeup.wait(until: nil, clock: clock)
                continue
            }
            if lastCleanup.map({ clock.now.timeIntervalSince($0) >= 3600 }) ?? true {
                lastCleanup = clock.now
                await forgetFinishedTasks()
            }
            let held = await runDueTasks()
            let now = clock.now
            var deadline = await nextLook(now) { try await store.nextRunnableDate(after: now) }
            if let next = deadline, next <= now {
                switch held {
                case .nothing:
                    // Became due while this pass ran (the clock moved): look again now.
                    await Task.yield()
                    continue
                case .starting(let lookedAt):
                    // The tasks this pass started look due until their attempts are stored as
                    // running, and a pass now would only find them starting (it made two passes
                    // of every submission). The pass saw every task due by `lookedAt`: look again
                    // when one after that is due (at once for one that came due during the pass).
                    deadline = await nextLook(now) { try await store.nextRunnableDate(laterThan: lookedAt) }
                case .byLimits:
                    // Runnable but held by a limit: a finishing task wakes us; look again in a second anyway.
                    deadline = now.addingTimeInterval(1)
                case .byNetwork:
                    // Only the network or power holds them: the monitor wakes us when they change.
                    deadline = await nextLook(now) { try await store.nextRunnableDate(laterThan: now) }
                }
            }
            if let cleanup = lastCleanup?.addingTimeInterval(3600) { deadline = min(deadline ?? cleanup, cleanup) }
            await wakeup.wait(until: deadline, clock: clock)
        }
    }

    /// When the next task is due as the store says (nil: none), or a second from `now` when it
    /// cannot say: sleeping until woken would leave a timed retry or begin date waiting for the
    /// next submission.
    private func nextLook(_ now: Date, _ read: () async throws -> Date?) async -> Date? {
        do {
            return try await read()
        } catch {
            logger.warning("cannot read when the next task is due", metadata: ["error": "\(error)"])
            return now.addingTimeInterval(1)
        }
    }

    /// What held runnable tasks back in a scheduling pass, and so when to look again.
    enum Held {
        /// Nothing: look again when the next task is due.
        case nothing
        /// Nothing, and some started: every task due by `lookedAt` was looked at, and the ones
        /// still due by then are those being started, until their attempts are stored.
        case starting(lookedAt: Date)
        /// A limit (or the store could not be read): on a wake-up, or in a second.
        case byLimits
        /// Only the network or power: when the monitor sees a change, or the next task is due.
        case byNetwork
    }

    /// One pass: starts runnable tasks whose host the network reaches as their session allows,
    /// within the global and per-host limits, highest priority first, and records why the
    /// others wait.
    func runDueTasks() async -> Held {
        wakeup.clear()
        let now = clock.now
        var held: [TaskKey: WaitingReason] = [:]
        var sessions = SessionLookup()
        var offset = 0
        var started = 0
        var lookedAtAll = false
        // Pages of runnable tasks, best first, until the slots are full or none is left: tasks
        // held by the network or a host limit must not hide the ones after them. At most
        // `maximumPages` a pass; the rest wait for the next.
        for _ in 0..<Self.maximumPages where !isStopping {
            let due: [TaskRecord]
            do {
                due = try await store.runnableTasks(now: now, limit: Self.pageSize, offset: offset)
            } catch {
                logger.error("cannot read runnable tasks", metadata: ["error": "\(error)"])
                return .byLimits  // look again in a second, not at once
            }
            for record in due where !isStopping {
                if let reason = await start(record, sessions: &sessions) { held[record.key] = reason } else { started += 1 }
            }
            offset += due.count
            if due.count < Self.pageSize { lookedAtAll = true }
            if due.count < Self.pageSize || running.count >= configuration.globalTaskLimit { break }
        }
        blocked = held
        awaitingSlot = held.values.contains { $0.kind == .globalLimit || $0.kind == .hostLimit }
        if held.isEmpty { return started > 0 && lookedAtAll ? .starting(lookedAt: now) : .nothing }
        return lookedAtAll && held.values.allSatisfy(\.kind.isConnectivity) ? .byNetwork : .byLimits
    }

    /// Runnable tasks read at a time, and pages read in one pass.
    static let pageSize = 1000
    static let maximumPages = 20

    /// Starts `record` if the network, the global limit and its session's per-host limit let
    /// it; otherwise returns why it waits.
    private func start(_ record: TaskRecord, sessions: inout SessionLookup) async -> WaitingReason? {
        let key = record.key
        guard running[key] == nil else {
            return WaitingReason(kind: .ready, message: "starting")  // its start is under way
        }
        let host = record.request.url.host?.lowercased() ?? ""
        let session = try? await sessions.record(record.sessionIdentifier, in: store)
        let access = session?.networkAccess ?? .unrestricted
        let link: String?
        switch network.admission(host: host, access: access) {
        case .held(let hold):
            announceWaiting(key, reason: hold, access: access)
            return hold
        case .allowed(let over):
            link = over
        }
        if running.count >= configuration.globalTaskLimit {
            awaitingSlot = true  // from now: a task ending during this pass wakes the next
            return WaitingReason(kind: .globalLimit, message: "ferryd already runs \(configuration.globalTaskLimit) tasks, its limit")
        }
        let limit = session?.maximumConnectionsPerHost ?? 6
        let sameHost = running.values.filter { $0.session == record.sessionIdentifier && $0.host == host }.count
        if sameHost >= limit {
            awaitingSlot = true
            return WaitingReason(
                kind: .hostLimit, host: host,
                message: "the session already runs \(limit) tasks against \(host) (httpMaximumConnectionsPerHost)")
        }
        let task = RunningTask(session: record.sessionIdentifier, host: host, link: link)
        running[key] = task
        schedule(.attempt(record, session, task.attempt))
        return nil
    }

    /// Deletes finished, fully acknowledged tasks older than the retention (at start, then
    /// at most hourly).
    func forgetFinishedTasks() async {
        do {
            let deleted = try await store.deleteFinishedTasks(changedBefore: clock.now.addingTimeInterval(-configuration.finishedTaskRetention))
            if deleted > 0 { logger.info("forgot finished tasks", metadata: ["count": "\(deleted)"]) }
        } catch {
            logger.warning("cannot forget finished tasks", metadata: ["error": "\(error)"])
        }
    }

    /// Stops a running transfer for a control request, shutdown or a lost route, and waits
    /// until it has let go (its progress and resume point are saved). The caller then sets the
    /// state. A task whose outcome is being stored is not stopped, nor one another interrupt
    /// already stops: this waits for it to end. True when this call stopped it.
    @discardableResult
    func interrupt(_ key: TaskKey, because reason: StopReason) async -> Bool {
        guard let task = running[key] else { return false }
        let attempt = task.attempt
        if task.completing || task.stop != nil {
            await attempt.ended()
            return false
        }
        running[key]?.stop = reason
        attempt.stop()
        await attempt.ended()
        return true
    }

    /// Runs one attempt of a task through the engine and stores what came of it. `known`: the
    /// session's record as the scheduling pass read it (one read per pass, not per attempt: a
    /// thousand attempts starting together read the same record a thousand times); a session
    /// changed since is changed for the next attempt, as one changed during a transfer is.
    func execute(_ queued: TaskRecord, session known: SessionRecord?) async {
        let key = queued.key
        var logger = self.logger
        logger[metadataKey: "session"] = "\(key.session)"
        logger[metadataKey: "task"] = "\(key.task)"
        // Set once the task completed: it is not the scheduler's any more.
        var completed = false
        defer {
            running[key] = nil
            // A task that waits again (a retry, an interruption) may change when the scheduler
            // must look next. A completed one only frees its slot, which matters to tasks a limit
            // held in the last pass or in the one under way; else nothing waits for it (a
            // thousand transfers ending together woke the scheduler for a thousand passes that
            // found nothing, and so did every completion while submissions kept passes going).
            if !completed || awaitingSlot { wakeup.signal() }
        }
        let deadline = queued.createdAt.addingTimeInterval(queued.timeoutIntervalForResource ?? TaskSubmission.defaultResourceTimeout)
        do {
            if clock.now >= deadline {
                try await fail(key, code: "timedOut", message: "the task did not finish within its timeoutIntervalForResource", resumeData: nil)
                return
            }
            guard running[key]?.stop == nil else { return }
            // Not waiting any more: suspended or cancelled while it was being started, not ours to change.
            guard let record = try await store.startAttempt(session: key.session, task: key.task, now: clock.now) else { return }
            activity.attempts += 1
            let read = known == nil ? try await store.session(key.session) : nil
            guard let session = known ?? read else { return }
            let transfer = try await makeTransfer(record, session: session, deadline: deadline)
            let retry = RetryContext(record, defaultPolicy: configuration.defaultRetryPolicy, deadline: deadline)
            let reporter = TaskReporter(
                key: key, kind: record.kind, hadResumePoint: record.resumeValidator != nil || record.uploadResourceURL != nil, retry: retry,
                daemon: self, clock: clock, configuration: configuration)
            logger.info("attempt started", metadata: ["attempt": "\(record.attemptCount)"])
            let outcome: Result<TransferResult, FerryError>
            do {
                outcome = .success(try await engine.run(transfer, observer: reporter))
            } catch let error as FerryError {
                outcome = .failure(error)
            } catch {
                outcome = .failure(FerryError(.unknown, "\(error)", underlying: error))
            }
            let snapshot = reporter.snapshot
            let moved = (try? outcome.get()).map { ($0.bytesSent, $0.bytesReceived) } ?? (snapshot.bytesSent, snapshot.bytesReceived)
            activity.bytesSent += max(0, moved.0 - record.bytesSent)
            activity.bytesReceived += max(0, moved.1 - record.bytesReceived)
            if running[key]?.stop != nil {
                await persistProgress(key, snapshot)
                logger.info("attempt interrupted")
                return
            }
            switch outcome {
            case .success(let result):
                running[key]?.completing = true
                try await complete(record, result: result, destination: transfer.destination, logger: logger)
                completed = true
            case .failure(let error):
                try await attemptFailed(record, error: error, snapshot: snapshot, retry: retry, logger: logger)
            }
        } catch {
            logger.error("task could not be run", metadata: ["error": "\(error)"])
            try? await fail(key, code: "unknown", message: "ferryd could not run the task: \(error)", resumeData: nil)
        }
    }

    /// The engine's transfer for a stored task: bodies from and to files, resume points,
    /// time-outs. ferryd retries itself (stored, with its clock), so the engine tries once.
    func makeTransfer(_ record: TaskRecord, session: SessionRecord, deadline: Date) async throws -> Transfer {
        var request = FerryEngine.Request(url: record.request.url, method: record.request.method, headers: record.request.headers)
        request.expectedSHA256 = record.task.options.expectedSHA256
        let destination: Destination
        switch record.kind {
        case .download:
            let file = try await destinationURL(for: record, session: session)
            var resume: ResumePoint?
            if let validator = record.resumeValidator, let size = Self.fileSize(file.path), size > 0 {
                resume = ResumePoint(offset: size, validator: validator)
            }
            destination = .file(file, resume: resume)
        case .data, .upload:
            destination = .memory(limit: configuration.maximumResponseBodySize)
        }
        var transfer = Transfer(
            request: request, upload: record.bodyFile.map { .file(URL(fileURLWithPath: $0)) }, destination: destination,
            resourceTimeout: max(1, deadline.timeIntervalSince(clock.now)), idleTimeout: record.timeoutIntervalForRequest ?? 60,
            retry: .none, resumableUpload: session.transferOptions.usesResumableUploads ? .automatic : .disabled)
        transfer.additionalTrustedCertificateFiles = session.transferOptions.additionalTrustedCertificateFiles
        transfer.allowsHTTP2 = session.transferOptions.allowsHTTP2
        transfer.proxies = session.transferOptions.proxies
        transfer.clientIdentity = session.transferOptions.clientIdentity
        if !record.credentials.isEmpty { transfer.credentials = SubmittedCredentials(record.credentials, origin: record.request.url) }
        if let location = record.uploadResourceURL.flatMap(URL.init(string:)), let version = record.uploadInteropVersion {
            transfer.resumeUpload = ResumableUploadPoint(location: location, interopVersion: version)
        }
        return transfer
    }

    /// The submission's destination, or `<container>/downloads/<task>.download`; its folder
    /// is created `0700`.
    func destinationURL(for record: TaskRecord, session: SessionRecord) async throws -> URL {
        if let destination = record.destination {
            // Absolute (`TaskDescription.problem`): its folder is what comes before the last slash.
            let folder = destination.lastIndex(of: "/").map { String(destination[..<$0]) } ?? "/"
            try Self.makeFolder(folder.isEmpty ? "/" : folder)
            return URL(fileURLWithPath: destination, isDirectory: false)
        }
        let folder = downloadsFolder(of: session)
        try Self.makeFolder(folder)
        return URL(fileURLWithPath: folder + "/\(record.taskIdentifier).download", isDirectory: false)
    }

    /// `<container>/downloads` of the session, standardized, as a path.
    func downloadsFolder(of session: SessionRecord) -> String {
        let key = session.identifier + "\u{0}" + (session.sharedContainerIdentifier ?? "") + "\u{0}" + session.appBundleIdentifier
        if let known = downloadsFolders[key] { return known }
        let folder = containerURL(of: session).appendingPathComponent("downloads", isDirectory: true).standardizedFileURL.path
        if downloadsFolders.count >= 4096 { downloadsFolders.removeAll() }  // bounded; it fills again as used
        downloadsFolders[key] = folder
        return folder
    }

    /// Creates `path` (`0700`) unless it exists: one `mkdir` when its parent does, the
    /// intermediate folders too when it does not.
    static func makeFolder(_ path: String) throws {
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func defaultDestination(for record: TaskRecord) async throws -> URL? {
        guard let session = try await store.session(record.sessionIdentifier) else { return nil }
        return try await destinationURL(for: record, session: session)
    }

    // MARK: Outcomes

    /// Success: the response, its body (data events, or the download's file) and `completed`
    /// are stored with the final state in one transaction.
    private func complete(_ record: TaskRecord, result: TransferResult, destination: Destination, logger: Logger) async throws {
        let key = record.key
        var kinds: [EventKind] = [
            .response(ResponseHead(statusCode: result.response.statusCode, headers: result.response.headers, url: result.response.url)),
        ]
        if let body = result.body, !body.isEmpty {
            var offset = 0
            while offset < body.count {
                let end = min(offset + EventKind.maximumDataSize, body.count)
                kinds.append(.data(body.subdata(in: offset..<end)))
                offset = end
            }
        }
        var delivered: String?
        if case .file(let file, _) = destination {
            do {
                delivered = try await placeDownload(file, of: record, status: result.response.statusCode, logger: logger)
            } catch {
                try? FileManager.default.removeItem(at: file)
                logger.notice("task failed", metadata: ["error": "cannotWriteToFile"])
                try await fail(key, code: "cannotWriteToFile", message: "\(error.message); the download was deleted", resumeData: nil)
                return
            }
            kinds.append(.downloadFinished(DownloadFinished(location: delivered ?? file.path)))
        }
        kinds.append(.completed)
        let events = try kinds.map { try $0.newEvent(session: key.session, task: key.task) }
        let completion = TaskCompletion(
            responseStatus: result.response.statusCode, bytesSent: result.bytesSent, bytesReceived: result.bytesReceived, deliveredTo: delivered)
        try await store.completeTask(session: key.session, task: key.task, completion, appending: events, now: clock.now)
        // Its commit handed the events to the delivery service (`EventOutbox`).
        await discardSpooledBody(record.bodyFile, of: key)
        activity.completedTasks += 1
        announcedWaiting.remove(key)
        logger.info("task completed", metadata: ["status": "\(result.response.statusCode)", "requests": "\(result.requestCount)"])
    }

    /// The rulebook's answer for a failed attempt (a retryable status decided it already):
    /// stored as the next attempt's time, or the task's failure.
    private func attemptFailed(_ record: TaskRecord, error: FerryError, snapshot: TaskReporter.Snapshot, retry: RetryContext, logger: Logger) async throws {
        let key = record.key
        await persistProgress(key, snapshot)
        let now = clock.now
        var retry = retry
        retry.request.resumes = retry.request.resumes || snapshot.uploadResource != nil
        let outcome = error.attemptOutcome(responseArrived: false, bodyDelivered: false)
        let decision = snapshot.retryHint?.decision ?? retry.decide(outcome, now: now)
        let code = snapshot.retryHint.map { "http\($0.statusCode)" } ?? error.code.description
        switch decision {
        case .retryAfter(let delay, let wait, let reason), .resume(let delay, let wait, let reason):
            let at = now.addingTimeInterval(delay.timeInterval)
            let message = snapshot.retryHint == nil ? error.message : reason
            try await store.scheduleRetry(session: key.session, task: key.task, errorCode: code, errorMessage: message, at: at, reason: wait, now: now)
            activity.retries += 1
            logger.info("attempt failed; retrying", metadata: ["error": "\(code)", "at": "\(at.iso8601)", "reason": "\(wait)"])
        case .retryNow(let reason):
            try await store.scheduleRetry(session: key.session, task: key.task, errorCode: code, errorMessage: reason, at: now, reason: .backoff, now: now)
            activity.retries += 1
        case .outOfTime(let reason):
            logger.notice("task failed", metadata: ["error": "timedOut"])
            try await fail(key, code: "timedOut", message: reason, resumeData: await currentResumeData(key))
        case .fail(let reason), .deliver(let reason):
            let message: String
            if case .permanent = outcome { message = error.message } else { message = "\(error.message); \(reason)" }
            logger.notice("task failed", metadata: ["error": "\(code)"])
            try await fail(key, code: code, message: message, resumeData: await currentResumeData(key))
        }
    }

    private func currentResumeData(_ key: TaskKey) async -> Data? {
        guard let current = try? await store.task(session: key.session, task: key.task) else { return nil }
        return await resumeData(for: current)
    }

    /// Where a download writes: the stored destination, or the default in its container.
    func destination(of record: TaskRecord) async throws -> URL? {
        if let stored = record.destination { return URL(fileURLWithPath: stored) }
        return try await defaultDestination(for: record)
    }

    /// Resume data for a download that has a validator and bytes on disk; nil otherwise.
    func resumeData(for record: TaskRecord) async -> Data? {
        guard record.kind == .download, let validator = record.resumeValidator,
            let file = try? await destination(of: record), let size = Self.fileSize(file.path), size > 0
        else { return nil }
        return DownloadResumeToken(
            url: record.request.url, method: record.request.method, headers: record.request.headers.map { [$0.name, $0.value] },
            partialFile: file.path, bytesReceived: size, validator: validator
        ).encoded()
    }

    /// Final failure: state `failed` and its `failed` event in one transaction.
    func fail(_ key: TaskKey, code: String, message: String, resumeData: Data?) async throws {
        let event = try EventKind.failed(TransferFailure(code: code, message: message, resumeData: resumeData))
            .newEvent(session: key.session, task: key.task)
        let failed = try await store.updateTask(session: key.session, task: key.task, appending: [event], now: clock.now) { record in
            record.state = .failed
            record.lastErrorCode = code
            record.lastErrorMessage = message
        }
        await discardSpooledBody(of: failed)
        activity.failedTasks += 1
        announcedWaiting.remove(key)
    }

    /// Saves how far a transfer got: bytes, and a download's resume point (validator and the
    /// bytes in the file) or an upload's resource, so a restart continues from there.
    func persistProgress(_ key: TaskKey, _ snapshot: TaskReporter.Snapshot) async {
        do {
            try await store.updateTask(session: key.session, task: key.task, now: clock.now, durability: .written) { record in
                guard !record.state.isFinal else { return }
                record.bytesSent = snapshot.bytesSent
                record.bytesReceived = snapshot.bytesReceived
                record.bytesExpectedToSend = snapshot.bytesExpectedToSend ?? record.bytesExpectedToSend
                record.bytesExpectedToReceive = snapshot.bytesExpectedToReceive ?? record.bytesExpectedToReceive
                if let validator = snapshot.validator {
                    record.resumeValidator = validator
                    record.resumeOffset = snapshot.bytesReceived
                }
                if let resource = snapshot.uploadResource {
                    record.uploadResourceURL = resource.location.absoluteString
                    record.uploadInteropVersion = resource.interopVersion
                }
            }
        } catch {
            logger.warning("cannot record progress", metadata: ["session": "\(key.session)", "task": "\(key.task)", "error": "\(error)"])
        }
    }
}

/// A task's submitted credentials as the engine's default handling of a `401` asks for them:
/// for the task's own host, port and scheme only (never a host a redirect led to), the one for
/// the challenge's realm, else one for any realm. Accepted ones change nothing.
struct SubmittedCredentials: CredentialSource {
    let credentials: [TaskCredential]
    let origin: ProtectionSpace.Origin?

    init(_ credentials: [TaskCredential], origin: URL) {
        self.credentials = credentials
        self.origin = ProtectionSpace.Origin(origin)
    }

    func defaultCredential(for space: ProtectionSpace) -> Credential? {
        guard space.origin == origin else { return nil }
        let match = credentials.first { $0.realm != nil && $0.realm == space.realm } ?? credentials.first { $0.realm == nil }
        return match.map { Credential(user: $0.user, password: $0.password) }
    }

    func credentialAccepted(_ credential: Credential, for space: ProtectionSpace) {}
}
