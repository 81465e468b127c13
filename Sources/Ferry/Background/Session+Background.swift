public import FerryEngine
import FerryProtocol
import Foundation
public import Logging

extension Session {
    /// A background session, connected to ferryd before this returns: tasks it already has
    /// there (made by this program earlier, by its share extension, before a crash) are in
    /// ``allTasks``, and their stored events start arriving at the delegate.
    ///
    /// ```swift
    /// var configuration = Configuration.background(identifier: "com.example.imgshare.bg")
    /// configuration.sharedContainerIdentifier = "group.com.example.imgshare"
    /// do {
    ///     let session = try Session.background(configuration, delegate: Uploads())
    /// } catch let error as FerryError where error.code == .backgroundSessionInUseByAnotherProcess {
    ///     print("the app or its extension has the session open")
    /// }
    /// ```
    ///
    /// `Session(configuration:delegate:)` with a background configuration does the same but
    /// does not throw: its tasks then fail with the error when resumed.
    public static func background(
        _ configuration: Configuration, delegate: (any SessionDelegate)? = nil,
        logger: Logger = Logger(label: Session.loggerLabel)
    ) throws(FerryError) -> Session {
        guard configuration.isBackground else {
            throw FerryError(.unknown, "Session.background needs Configuration.background(identifier:)")
        }
        if let refusal = configuration.backgroundRefusal { throw refusal }
        let session = Session(configuration: configuration, delegate: delegate, logger: logger)
        if let failure = session.background?.failure { throw failure }
        return session
    }

    /// Why this background session could not connect to ferryd, if it could not.
    public var backgroundConnectionError: FerryError? { background?.failure }

    /// Attaches as the owner, mirrors ferryd's tasks here, and starts delivering events.
    func connectBackground(_ link: BackgroundLink) {
        link.onAcknowledged { [weak self] sequence in self?.backgroundEventsAcknowledged(upTo: sequence) }
        let tasks = link.attach(configuration: configuration)
        adoptMissing(tasks, link: link)
        guard let messages = link.pushedMessages else { return }
        let router = BackgroundEventRouter(session: self, link: link)
        delegateQueue.spawn { await router.run(messages) }
    }

    /// Mirrors the tasks ferryd has that this session does not (all of them at attach; after a
    /// reconnect, those another process submitted meanwhile). One that has ended here is not
    /// mirrored again (`adopt` skips it), nor one that ended and was delivered to an earlier
    /// process: as on the platform, a relaunched app's `allTasks` does not list it.
    func adoptMissing(_ tasks: [TaskInfo], link: BackgroundLink) {
        for info in tasks where !info.isDelivered && backgroundTasks(info.taskIdentifier).isEmpty {
            adopt(mirror(of: info, link: link))
        }
    }

    /// A task object for one ferryd already has: same identifier and request, its state and
    /// counters, and (unless suspended) running, so its events complete it.
    private func mirror(of info: TaskInfo, link: BackgroundLink) -> SessionTask {
        let request = Request(url: info.request.url, method: info.request.method, headers: info.request.headers)
        let task: SessionTask
        switch info.kind {
        case .download:
            task = DownloadTask(
                session: self, identifier: info.taskIdentifier, request: request,
                partialFile: link.places.provisionalDownloadFile(session: link.sessionIdentifier, task: info.taskIdentifier), validator: nil)
        case .upload:
            task = UploadTask(session: self, identifier: info.taskIdentifier, request: request, body: .data(Data()), completionHandler: nil)
        case .data:
            task = DataTask(session: self, identifier: info.taskIdentifier, request: request, completionHandler: nil)
        }
        task.adoptBackgroundState(info)
        return task
    }
}

extension SessionTask {
    /// Takes on the state ferryd reports for a task this process did not create.
    func adoptBackgroundState(_ info: TaskInfo) {
        lock.withLockedValue { m in
            m.isInDaemon = true
            m.taskDescription = info.taskDescription
            m.priority = Float(info.priority)
            m.earliestBeginDate = info.earliestBeginDate
            m.idempotencyKey = info.idempotencyKey
            m.countOfBytesSent = info.bytesSent
            m.countOfBytesReceived = info.bytesReceived
            m.countOfBytesExpectedToSend = info.bytesExpectedToSend ?? 0
            m.countOfBytesExpectedToReceive = info.bytesExpectedToReceive ?? -1
            m.waitingReason = info.waitingReason.flatMap { $0.kind == .ready ? nil : $0 }
            // Suspended stays suspended; anything else runs here until its last event arrives.
            m.lifecycle.adopt(suspended: info.state == .suspended)
        }
    }
}
