import FerryCore
import FerryEngine
import FerryProtocol
import Foundation
import Logging

/// Hands what ferryd pushes to the background session's tasks and delegate, in order.
///
/// Stored events (response, data, download finished, completion) go through the same
/// ``TaskObserver`` as an in-process transfer, so the delegate sees the same callbacks. They
/// are acknowledged after their callbacks returned and their task has ended here (see
/// ``EventSettlement``); one seen before (a redelivery after a
/// reconnect) is only acknowledged. Progress is live and only updates counters and the
/// progress callbacks.
struct BackgroundEventRouter: Sendable {
    let session: Session
    let link: BackgroundLink

    /// Routes the connection's messages; when it is lost while the session lives, reconnects
    /// (``BackgroundLink/reconnect(configuration:)``), takes on tasks ferryd gained meanwhile,
    /// and routes the new connection's messages, until the session ends.
    func run(_ first: AsyncStream<DaemonMessage>) async {
        var messages: AsyncStream<DaemonMessage>? = first
        while let current = messages {
            await route(current)
            session.logger.info("background session disconnected from ferryd", metadata: ["session": "\(link.sessionIdentifier)"])
            guard let again = await link.reconnect(configuration: session.configuration) else { break }
            session.adoptMissing(again.tasks, link: link)
            messages = again.messages
        }
    }

    private func route(_ messages: AsyncStream<DaemonMessage>) async {
        for await message in messages {
            switch message {
            case .event(let event):
                await link.delegateCaughtUp()
                link.tookMessage(bytes: event.kind.bodyBytes)
                await handle(event)
            case .progress(let progress):
                link.tookMessage()
                self.progress(progress)
            case .waitingForConnectivity(let waiting):
                for task in session.backgroundTasks(waiting.taskIdentifier) {
                    await TaskObserver(task: task).transferIsWaitingForConnectivity(waiting.reason)
                }
            case .eventsFinished:
                if let delegate = session.delegate {
                    let session = self.session
                    await session.delegateQueue.ask { await delegate.sessionDidFinishEvents(forBackgroundSession: session) }
                }
            case .eventsWaiting(let other):
                session.logger.info("ferryd says events wait for another session of this app", metadata: ["session": "\(other)"])
                BackgroundLaunch.eventsWaiting(for: other)
            case .challenge(let challenge):
                answer(challenge)
            case .goodbye(let error):
                session.logger.notice("ferryd closed the session's connection", metadata: [
                    "session": "\(link.sessionIdentifier)", "reason": "\(error.code.rawValue)",
                ])
            default:
                break
            }
        }
    }

    private func handle(_ event: Event) async {
        guard link.shouldHandle(sequence: event.sequence) else {
            // Seen before this reconnect; acknowledged again only as far as its tasks ended.
            let settled = min(event.sequence, link.settledSequence)
            if settled > 0 { await link.acknowledge(upTo: settled) }
            return
        }
        let bytes = event.kind.bodyBytes
        guard link.beginEvent(bytes: bytes) else { return }  // leaving: the next process gets it
        let tasks = event.taskIdentifier.map { session.backgroundTasks($0) } ?? []
        for task in tasks { await deliver(event.kind, to: task, storedAt: event.storedAt) }
        if tasks.isEmpty {
            session.logger.debug("event for a task this process does not have", metadata: [
                "session": "\(link.sessionIdentifier)", "task": "\(event.taskIdentifier.map(String.init) ?? "-")",
            ])
        }
        // Every callback enqueued so far has returned once this barrier runs. An event no task
        // here waits for counts as settled: nobody will finish it in this process. The router
        // does not wait for it: the next event's callbacks queue behind it anyway, and waiting
        // cost each event two thread hops in a line of a thousand.
        let link = self.link
        let task = tasks.isEmpty ? nil : event.taskIdentifier
        let settles = event.kind.settlesTask
        if settles, let identifier = event.taskIdentifier { session.backgroundTask(identifier, settledBy: event.sequence) }
        let settle: DelegateQueue.Job = {
            await link.endEvent(bytes: bytes, acknowledging: link.markDelivered(event.sequence, task: task, settlesTask: settles))
        }
        if !session.delegateQueue.enqueue(settle) { await settle() }  // the queue has ended: settle here
    }

    /// `storedAt`: when ferryd stored the event; a task's end is then, not when it is heard of.
    private func deliver(_ kind: EventKind, to task: SessionTask, storedAt: Date?) async {
        let observer = TaskObserver(task: task)
        let url = task.currentRequest?.url ?? task.originalRequest.url
        task.noteWaiting(nil)
        switch kind {
        case .response(let head):
            // Against the URL that answered (ferryd follows redirects); a daemon that does not
            // say which stores none rather than give one host's cookies to another.
            if task.originalRequest.handlesCookies, let answered = head.url {
                task.session.configuration.cookieJar?.storeCookies(from: head.headers, for: answered)
            }
            let allowed = await observer.transferDidReceive(response: Response(url: url, statusCode: head.statusCode, headers: head.headers))
            if !allowed { task.cancel() }
        case .data(let bytes):
            await observer.transferDidReceive(data: bytes)
        case .downloadFinished(let finished):
            await task.fileArrived(at: URL(fileURLWithPath: finished.location))
        case .completed:
            if let generation = task.currentGeneration { task.finish(error: nil, generation: generation, endedAt: storedAt) }
        case .failed(let failure):
            let error = FerryError(FerryError.Code(named: failure.code), failure.message, url: url, resumeData: failure.resumeData)
            if let generation = task.currentGeneration { task.finish(error: error, generation: generation, endedAt: storedAt) }
        }
    }

    /// Dropped while the delegate is behind: the next report carries the totals (each
    /// callback's byte count is from the task's last count).
    private func progress(_ progress: TaskProgress) {
        guard link.beginProgress() else { return }
        for task in session.backgroundTasks(progress.taskIdentifier) { report(progress, to: task) }
        let link = self.link
        if !session.delegateQueue.enqueue({ link.endProgress() }) { link.endProgress() }
    }

    private func report(_ progress: TaskProgress, to task: SessionTask) {
        task.noteWaiting(nil)  // bytes move: it no longer waits
        let observer = TaskObserver(task: task)
        if task.kind == .download {
            let before = task.countOfBytesReceived
            guard progress.bytesReceived != before else { return }
            observer.transferDidWrite(
                bytes: progress.bytesReceived - before, totalBytesWritten: progress.bytesReceived,
                totalBytesExpectedToWrite: progress.bytesExpectedToReceive ?? -1)
        } else if progress.bytesSent > 0 {
            let before = task.countOfBytesSent
            guard progress.bytesSent != before else { return }
            observer.transferDidSend(
                bytes: progress.bytesSent - before, totalBytesSent: progress.bytesSent,
                totalBytesExpectedToSend: progress.bytesExpectedToSend ?? -1)
        }
    }
}

extension EventKind {
    /// After this event the task's earlier events may be acknowledged: its end (completion,
    /// failure), or a download's file handed over (moved by the delegate, it cannot be handed
    /// over again; only the completion is left).
    var settlesTask: Bool {
        switch self {
        case .completed, .failed, .downloadFinished: true
        case .response, .data: false
        }
    }
}

extension EventKind {
    /// The body bytes the event carries (a data event's), which the session's pacing bounds.
    var bodyBytes: Int {
        if case .data(let bytes) = self { return bytes.count }
        return 0
    }
}
