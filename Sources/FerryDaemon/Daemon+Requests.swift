import FerryCore
import FerryApps
import FerryProtocol
import FerryStore
import Foundation
import Logging

extension Daemon {
    func serve(_ request: FerryProtocol.Request, from connection: ClientConnection) async throws -> Reply {
        switch request {
        case .attach(let attach):
            return .attached(try await attachSession(attach, from: connection))
        case .listSessions:
            return .sessions(try await store.sessionSummaries().map { $0.info(isOwned: owner(of: $0.session.identifier) != nil) })
        case .listTasks(let list):
            guard try await store.session(list.sessionIdentifier) != nil else { throw unknownSession(list.sessionIdentifier) }
            return .tasks(try await taskPage(list.sessionIdentifier, after: list.afterTaskIdentifier ?? 0, limit: list.limit))
        case .reserveTaskIdentifier(let reservation):
            return .taskIdentifier(try await store.nextTaskIdentifier(in: reservation.sessionIdentifier, count: reservation.count ?? 1))
        case .submit(let submission):
            return .submitted(try await submit(submission))
        case .suspend(let reference):
            return .task(try await suspend(reference))
        case .resume(let reference):
            return .task(try await resume(reference))
        case .cancel(let reference):
            return .task(try await cancel(reference, producingResumeData: false).task)
        case .cancelProducingResumeData(let reference):
            return .resumeData(try await cancel(reference, producingResumeData: true))
        case .invalidate(let invalidate):
            if invalidate.cancelTasks {
                for task in try await store.tasks(in: invalidate.sessionIdentifier) where !task.state.isFinal {
                    _ = try await cancel(TaskReference(sessionIdentifier: task.sessionIdentifier, taskIdentifier: task.taskIdentifier), producingResumeData: false)
                }
            }
            // No event may follow the reply: delivery stops before it is queued (live sends too).
            if owner(of: invalidate.sessionIdentifier) == connection.id { update(invalidate.sessionIdentifier) { $0.stopDelivery() } }
            return .invalidated(SessionReference(sessionIdentifier: invalidate.sessionIdentifier))
        case .answerChallenge(let reply):
            return try answerChallenge(reply, from: connection)
        case .taken(let taken):  // the connection's handler answers these itself; the same here
            connection.took(taken.count, of: taken.sessionIdentifier)
            return .taken(taken)
        case .acknowledge(let ack):
            let single = Set(ack.sequences ?? []).filter { $0 > ack.upToSequence }
            let removed = try await acknowledgeEvents(in: ack.sessionIdentifier, upTo: ack.upToSequence, also: single)
            logger.debug("acknowledged", metadata: ["session": "\(ack.sessionIdentifier)", "upTo": "\(ack.upToSequence)", "removed": "\(removed)"])
            return .acknowledged(ack)
        case .status:
            return .status(try await status())
        case .metrics:
            return .metrics(try await metricsText())
        case .stop:
            return .stopping
        }
    }

    /// What happens once the reply is on its way: events after `attached`, the release after
    /// `invalidated`, the shutdown after `stopping`.
    func afterReply(_ request: FerryProtocol.Request, from connection: ClientConnection) async {
        switch request {
        case .attach(let attach) where attach.owner && owner(of: attach.sessionIdentifier) == connection.id:
            update(attach.sessionIdentifier) { $0.ownerAttached() }
            await pumpEvents(attach.sessionIdentifier)
        case .invalidate(let invalidate):
            release(invalidate.sessionIdentifier)
            connection.logger.info("session invalidated", metadata: ["session": "\(invalidate.sessionIdentifier)"])
        case .stop:
            connection.logger.notice("stop requested")
            schedule(.stop)
        default:
            break
        }
    }

    func unknownSession(_ session: String) -> FerryProtocolError {
        FerryProtocolError(.unknownSession, "no background session \(session): attach to create it")
    }

    // MARK: Attach

    private func attachSession(_ attach: AttachSession, from connection: ClientConnection) async throws -> Attached {
        let session = attach.sessionIdentifier
        let app = apps.identify(pid: connection.peer.pid)
        if let group = attach.sharedContainerIdentifier, !app.appGroups.contains(group) {
            throw FerryProtocolError(
                .notInAppGroup,
                "\(app.bundleIdentifier ?? "this process") is not in app group \(group): add the group to the app's manifest (ferry apps install)")
        }
        let existing = try await store.session(session)
        if !attach.owner, existing == nil {
            throw unknownSession(session)  // watching creates nothing
        }
        if attach.owner, let refusal = app.refusalToOwn(session) {
            throw FerryProtocolError(.undeclaredSession, refusal)
        }
        if attach.owner, let group = existing?.sharedContainerIdentifier, !app.appGroups.contains(group) {
            throw FerryProtocolError(.notInAppGroup, "session \(session) lives in app group \(group), which \(app.bundleIdentifier ?? "this process") is not in")
        }
        if attach.owner {
            // Taken before the first await, so a second owner racing this one is refused.
            guard update(session, { $0.take(by: connection.id) }) else {
                let pid = owner(of: session).flatMap { connections[$0]?.peer.pid }
                throw FerryProtocolError(
                    .backgroundSessionInUseByAnotherProcess,
                    "session \(session) is owned by another process\(pid.map { " (pid \($0))" } ?? "")")
            }
            connection.pace(session, window: attach.eventWindow, byteWindow: attach.eventByteWindow)
        } else {
            update(session) { $0.watch(by: connection.id) }
        }
        do {
            let bundle = app.containingApp ?? app.bundleIdentifier ?? Self.unregistered(client: connection.hello.map { FerryPaths.fileName($0.clientName) } ?? "client")
            if existing == nil {
                let keepsEvents = attach.keepsEvents ?? true
                if !keepsEvents, !Self.isUnregistered(bundle) {
                    throw FerryProtocolError(.badRequest, "keepsEvents false is for a session of no app: \(bundle) is launched for its session's events")
                }
                _ = try await store.openSession(
                    session, appBundleIdentifier: bundle, sharedContainerIdentifier: attach.sharedContainerIdentifier,
                    keepsEvents: keepsEvents, now: clock.now)
                logger.info("session created", metadata: ["session": "\(session)", "app": "\(bundle)"])
            }
            if attach.owner,
                attach.httpMaximumConnectionsPerHost != nil || attach.networkAccess != nil || attach.transferOptions != nil
                    || attach.sendsLaunchEvents != nil
            {
                try await store.configure(
                    session: session, maximumConnectionsPerHost: attach.httpMaximumConnectionsPerHost,
                    networkAccess: attach.networkAccess, transferOptions: attach.transferOptions,
                    sendsLaunchEvents: attach.sendsLaunchEvents)
                wakeup.signal()  // a task held by the old settings may start under the new ones
            }
            let page = try await taskPage(session, after: 0, limit: nil)
            if attach.owner {
                connection.logger.info("session attached", metadata: ["session": "\(session)", "owner": "true"])
                ownerArrivals.arrived(session)  // a challenge may wait for this app to answer it
            }
            return Attached(sessionIdentifier: session, owner: attach.owner, tasks: page.tasks, nextAfterTaskIdentifier: page.nextAfterTaskIdentifier)
        } catch {
            if attach.owner, owner(of: session) == connection.id { update(session) { $0.release() } }
            throw error
        }
    }

    /// A page of the session's tasks with their waiting reasons, cut short if its reply
    /// would not fit a frame.
    func taskPage(_ session: String, after: Int, limit: Int?) async throws -> TaskPage {
        let count = min(limit ?? TaskPage.maximumCount, TaskPage.maximumCount)
        let records = try await store.tasks(in: session, after: after, limit: count + 1)
        let page = records.prefix(count)
        var withEvents: Set<Int> = []
        if let first = page.first, let last = page.last {
            withEvents = try await store.tasksWithEvents(in: session, from: first.taskIdentifier, through: last.taskIdentifier)
        }
        var tasks = page.map { record in
            var task = info(record)
            task.eventsPending = withEvents.contains(record.taskIdentifier)
            return task
        }
        var next = records.count > count ? tasks.last?.taskIdentifier : nil
        let coder = MessageCoder()
        while tasks.count > 1,
            let size = try? coder.encode(DaemonMessage.reply(id: .max, .tasks(TaskPage(tasks: tasks, nextAfterTaskIdentifier: next)))).readableBytes,
            size > FrameDecoder.defaultMaximumFrameSize - 1024
        {
            tasks.removeLast(tasks.count / 2)
            next = tasks.last?.taskIdentifier
        }
        return TaskPage(tasks: Array(tasks), nextAfterTaskIdentifier: next)
    }

    /// The task as clients see it, with why it waits.
    func info(_ record: TaskRecord) -> TaskInfo {
        if record.state == .waiting, let reason = blocked[record.key] { return record.info(waitingReason: reason) }
        if record.state == .running, let reason = challenges.waitingReason(session: record.sessionIdentifier, task: record.taskIdentifier) {
            return record.info(waitingReason: reason)
        }
        return record.info(waitingReason: record.storedWaitingReason(now: clock.now))
    }

    // MARK: Submit

    private func submit(_ submission: TaskSubmission) async throws -> Submitted {
        let task = try await prepare(submission, session: try await sessionRecord(submission.sessionIdentifier))
        return submitted(try await store.submit(task, now: clock.now))
    }

    /// The submitted task as the reply carries it; wakes the scheduler for a new one.
    func submitted(_ result: SubmitResult) -> Submitted {
        if result.isNew {
            logger.info("task submitted", metadata: [
                "session": "\(result.task.sessionIdentifier)", "task": "\(result.task.taskIdentifier)", "kind": "\(result.task.kind)",
            ])
            wakeup.signal()
        }
        return Submitted(task: info(result.task), existing: !result.isNew)
    }

    /// Checks a submission against what only ferryd knows (the session, its container, the
    /// body file, resume data) and makes the record to store.
    func prepare(_ submission: TaskSubmission, session: SessionRecord) async throws -> NewTask {
        var task = NewTask(sessionIdentifier: submission.sessionIdentifier, taskIdentifier: submission.taskIdentifier, task: submission.task)
        task.credentials = submission.credentials ?? []
        task.request.method = submission.request.method.uppercased()
        if let body = submission.bodyFile {
            var status = stat()
            guard access(body, R_OK) == 0, stat(body, &status) == 0 else {
                throw FerryProtocolError(.badRequest, "the body file \(body) does not exist or cannot be read by ferryd")
            }
            task.bodyLength = Int64(status.st_size)
        }
        try await checkDelivery(of: submission)
        // The container's path is worked out only for a destination or resume data to check:
        // most submissions have neither, and it was a tenth of a submission's allocations.
        if let destination = submission.destination {
            let container = containerURL(of: session)
            guard Self.isInside(destination, container) else {
                throw FerryProtocolError(.badRequest, "a download's destination must be inside the session's container \(container.path)")
            }
        }
        if let data = submission.resumeData {
            let token = try DownloadResumeToken.decode(data)
            guard Self.isInside(token.partialFile, containerURL(of: session)) else {
                throw FerryProtocolError(.badRequest, "the resume data's partial file is outside the session's container")
            }
            task.destination = token.partialFile
            task.resumeValidator = token.validator
            task.resumeOffset = token.bytesReceived
        }
        return task
    }

    /// The stored session, or `unknownSession`.
    func sessionRecord(_ identifier: String) async throws -> SessionRecord {
        guard let session = try await store.session(identifier) else { throw unknownSession(identifier) }
        return session
    }

    func containerURL(of session: SessionRecord) -> URL {
        containers.containerURL(group: session.sharedContainerIdentifier, appBundleIdentifier: session.appBundleIdentifier, session: session.identifier)
    }

    /// Whether `path`, made absolute and without `..`, is inside `folder`.
    static func isInside(_ path: String, _ folder: URL) -> Bool {
        isInside(path, standardizedFolder: folder.standardizedFileURL.path)
    }

    /// ``isInside(_:_:)`` for a folder already standardized (worked out once for many paths).
    static func isInside(_ path: String, standardizedFolder base: String) -> Bool {
        URL(fileURLWithPath: path).standardizedFileURL.path.hasPrefix(base.hasSuffix("/") ? base : base + "/")
    }

    // MARK: Task changes

    private func suspend(_ reference: TaskReference) async throws -> TaskInfo {
        let key = TaskKey(session: reference.sessionIdentifier, task: reference.taskIdentifier)
        let record = try await requireTask(key)
        switch record.state {
        case .suspended: return info(record)
        case .completed, .failed, .cancelled:
            throw FerryProtocolError(.invalidTaskState, "task \(key.task) is \(record.state) and cannot be suspended")
        case .waiting, .running:
            await interrupt(key, because: .suspend)
            let updated = try await store.updateTask(session: key.session, task: key.task, now: clock.now) { $0.state = .suspended }
            logger.info("task suspended", metadata: ["session": "\(key.session)", "task": "\(key.task)"])
            wakeup.signal()
            return info(updated)
        }
    }

    private func resume(_ reference: TaskReference) async throws -> TaskInfo {
        let key = TaskKey(session: reference.sessionIdentifier, task: reference.taskIdentifier)
        let record = try await requireTask(key)
        guard record.state == .suspended else {
            if record.state.isFinal {
                throw FerryProtocolError(.invalidTaskState, "task \(key.task) is \(record.state): submit a new task")
            }
            return info(record)
        }
        let updated = try await store.updateTask(session: key.session, task: key.task, now: clock.now) { $0.state = .waiting }
        wakeup.signal()
        return info(updated)
    }

    /// Cancels a task: its `failed` event (code `cancelled`, with resume data when asked and
    /// possible) is stored with the state, in one transaction.
    func cancel(_ reference: TaskReference, producingResumeData: Bool) async throws -> CancelledWithResumeData {
        let key = TaskKey(session: reference.sessionIdentifier, task: reference.taskIdentifier)
        let record = try await requireTask(key)
        if record.state.isFinal { return CancelledWithResumeData(task: info(record), resumeData: nil) }
        if producingResumeData, record.kind != .download {
            throw FerryProtocolError(.invalidTaskState, "only a download can be cancelled with resume data")
        }
        await interrupt(key, because: .cancel)
        let current = try await requireTask(key)
        await discardUploadResource(of: current)
        let resumeData = producingResumeData ? await resumeData(for: current) : nil
        if resumeData == nil, current.kind == .download, let file = try? await destination(of: current) {
            try? FileManager.default.removeItem(at: file)
        }
        let failure = EventKind.failed(TransferFailure(code: "cancelled", message: "the task was cancelled", resumeData: resumeData))
        let updated = try await store.updateTask(
            session: key.session, task: key.task, appending: [try failure.newEvent(session: key.session, task: key.task)], now: clock.now
        ) { record in
            record.state = .cancelled
            record.lastErrorCode = "cancelled"
            record.lastErrorMessage = "the task was cancelled"
        }
        await discardSpooledBody(of: updated)
        activity.cancelledTasks += 1
        announcedWaiting.remove(key)
        logger.info("task cancelled", metadata: ["session": "\(key.session)", "task": "\(key.task)", "resumeData": "\(resumeData != nil)"])
        wakeup.signal()
        return CancelledWithResumeData(task: info(updated), resumeData: resumeData)
    }

    /// A cancelled upload's resumable resource is deleted on the server (a suspended one is
    /// kept: it continues from the server's offset). In the background, bounded: the reply
    /// to `cancel` does not wait for the server.
    private func discardUploadResource(of record: TaskRecord) async {
        guard record.kind == .upload, record.uploadResourceURL != nil,
            let session = try? await store.session(record.sessionIdentifier),
            let transfer = try? await makeTransfer(record, session: session, deadline: clock.now.addingTimeInterval(30))
        else { return }
        schedule(.discardUpload(transfer, session: record.sessionIdentifier, task: record.taskIdentifier))
    }

    /// An upload body the library wrote from `Data` into the session's container is Ferry's
    /// file: deleted once its task has ended. A body the app named is never touched (the path
    /// must be exactly `FerryPaths.spooledUploadBody`).
    func discardSpooledBody(of record: TaskRecord) async {
        guard record.state.isFinal else { return }
        await discardSpooledBody(record.bodyFile, of: record.key)
    }

    /// Deletes `body`, the body file of a task that ended, when it is the copy ferryd spooled
    /// into the session's container.
    func discardSpooledBody(_ body: String?, of key: TaskKey) async {
        guard let body, let session = try? await store.session(key.session) else { return }
        let spooled = FerryPaths.spooledUploadBody(in: containerURL(of: session), session: key.session, task: key.task)
        guard URL(fileURLWithPath: body).standardizedFileURL.path == spooled.standardizedFileURL.path else { return }
        do {
            try FileManager.default.removeItem(at: spooled)
        } catch CocoaError.fileNoSuchFile {
        } catch {
            logger.notice("cannot delete a spooled upload body", metadata: [
                "session": "\(key.session)", "task": "\(key.task)", "error": "\(error)",
            ])
        }
    }

    func requireTask(_ key: TaskKey) async throws -> TaskRecord {
        guard let record = try await store.task(session: key.session, task: key.task) else {
            throw FerryProtocolError(.unknownTask, "session \(key.session) has no task \(key.task)")
        }
        return record
    }

    static func fileSize(_ path: String) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
    }

    // MARK: Status

    /// The figures in the Prometheus text format: the `metrics` request and ``MetricsListener``.
    func metricsText() async throws -> String {
        DaemonMetrics.exposition(of: try await status())
    }

    private func status() async throws -> DaemonStatus {
        let counts = try await store.taskCounts()
        let sessions = try await store.sessionCounts()
        return DaemonStatus(
            daemonVersion: configuration.daemonVersion, pid: getpid(), startedAt: startedAt,
            socketPath: configuration.socketURL.path, storePath: configuration.storeURL.path,
            sessionCount: sessions.sessions, connectionCount: connections.count, ownedSessionCount: self.sessions.values.filter { $0.owner != nil }.count,
            waitingTaskCount: counts[.waiting] ?? 0, runningTaskCount: counts[.running] ?? 0,
            suspendedTaskCount: counts[.suspended] ?? 0,
            undeliveredEventCount: sessions.undeliveredEvents,
            completedTaskCount: counts[.completed] ?? 0, failedTaskCount: counts[.failed] ?? 0,
            cancelledTaskCount: counts[.cancelled] ?? 0, residentMemoryBytes: DaemonMetrics.residentMemoryBytes(),
            activity: activity, network: network.status)
    }
}
