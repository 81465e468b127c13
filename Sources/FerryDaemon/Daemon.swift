import FerryCore
public import FerryEngine
import FerryNetwork
import FerryProtocol
public import FerryStore
public import Foundation
public import Logging
import NIOCore

/// The background service: connections and who owns which session, the requests of
/// docs/protocol.md, the scheduler that runs stored tasks through FerryEngine, stored
/// events and their delivery, and relaunching apps. See docs/ferryd.md.
///
/// Everything durable is in the ``FerryStore``; what lives here is what a restart may lose:
/// connections, owners, live progress, and which running task holds which connection slot.
///
/// ```swift
/// let store = try FerryStore(path: configuration.storeURL.path)
/// let daemon = try Daemon(configuration: configuration, store: store)
/// let server = try await DaemonServer.bind(daemon: daemon, at: configuration.socketURL)
/// try await daemon.run()   // until a `stop` request or `requestStop()`
/// ```
public actor Daemon {
    public let configuration: DaemonConfiguration
    let store: FerryStore
    let engine: TransferEngine
    let clock: any DaemonClock
    let apps: any PeerIdentifying
    let containers: any ContainerLocating
    let launcher: any AppLaunching
    let logger: Logger
    public let startedAt: Date

    // Connections and sessions (memory only: a restart drops every connection anyway).
    var connections: [UInt64: ClientConnection] = [:]
    /// Each session's owner, watchers, delivery and launch state (entries go when idle).
    var sessions: [String: SessionPresence] = [:]

    // Scheduling.
    var running: [TaskKey: RunningTask] = [:]
    /// Why runnable tasks were left waiting in the last scheduling pass (limits).
    var blocked: [TaskKey: WaitingReason] = [:]
    /// A task waits for a slot (the global or a host's limit), held by the last scheduling pass
    /// or by the one under way: a task that ends frees one. (Not a task whose start is under
    /// way, nor one the network holds.)
    var awaitingSlot = false
    let wakeup = Wakeup()
    /// The network and power as the monitor last read them (NetworkMonitorService).
    var network = NetworkConditions()
    /// Signalled by the monitor's readings (and at once when there is no monitor): the
    /// scheduler's first pass waits for the first, or it would start tasks the network cannot carry.
    let networkRead = Signal()
    /// Tasks whose owner was told they wait for the network (once per task; `announceWaiting`).
    var announcedWaiting: Set<TaskKey> = []
    /// A look at running transfers' routes is due (``interruptTransfersThatLostTheirRoute()``).
    var routeCheckScheduled = false
    /// Jobs for the work service (`schedule(_:)`), waiting in its lanes.
    let work = JobLanes()
    /// Authentication challenges waiting for their apps' answers.
    let challenges = PendingChallenges()
    /// `eventsFinished` waits while a challenge of its session does (``EventsFinishedHold``).
    let finishHold = EventsFinishedHold()
    /// Owners attaching, for challenges that wait for a started app (``answer(_:of:)``).
    let ownerArrivals = OwnerArrivals()
    /// Sessions whose stored events the delivery service pushes or launches an app for.
    let deliveries: AsyncStream<String>
    let deliveryQueue: AsyncStream<String>.Continuation
    /// Committed events not yet sent, for the sessions whose owner is being sent to.
    let outbox: EventOutbox
    /// Signalled once `shutdown()` has finished (the listener then closes the socket).
    let stoppedSignal = Signal()
    var isStopping = false
    var heapTrim = HeapTrim()
    /// Each session's downloads folder, worked out once (`downloadsFolder(of:)`): per download
    /// it cost more URL work than the rest of the download's start.
    var downloadsFolders: [String: String] = [:]
    /// What ferryd did since it started (`status`, `metrics`).
    var activity = DaemonActivity()
    var stopHandler: (@Sendable () -> Void)?

    public init(
        configuration: DaemonConfiguration,
        store: FerryStore,
        clock: any DaemonClock = SystemClock(),
        apps: any PeerIdentifying = NoApps(),
        containers: (any ContainerLocating)? = nil,
        launcher: any AppLaunching = NoLauncher(),
        engineConfiguration: EngineConfiguration = EngineConfiguration(),
        logger: Logger = Logger(label: "ferryd")
    ) throws {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.apps = apps
        self.containers = containers ?? DataDirectoryContainers(dataDirectory: configuration.dataDirectory)
        self.launcher = launcher
        self.logger = logger
        self.startedAt = clock.now
        var engineConfiguration = engineConfiguration
        // Per-host limits are the scheduler's (per session); the engine only must not be tighter.
        engineConfiguration.maximumConnectionsPerHost = max(engineConfiguration.maximumConnectionsPerHost, configuration.globalTaskLimit)
        // Every request is an attempt the scheduler counts and backs off from.
        engineConfiguration.resendsWhenClosedBeforeResponse = false
        self.engine = try TransferEngine(configuration: engineConfiguration, logger: logger)
        (deliveries, deliveryQueue) = AsyncStream.makeStream(of: String.self)
        outbox = EventOutbox(finishHold: finishHold, logger: logger)
        // Every commit with events sends them to live sessions' owners, and wakes the delivery
        // of the others (their events held for their pump, when it is catching up).
        store.observeCommittedEvents { [outbox, deliveryQueue] committed in
            for session in outbox.committed(committed) { deliveryQueue.yield(session) }
        }
    }

    /// Requeues the tasks a previous run left `running` (the scheduler's first step).
    func requeueInterruptedTasks() async throws {
        let requeued = try await store.requeueInterruptedTasks(now: clock.now)
        if requeued > 0 { logger.notice("requeued interrupted tasks", metadata: ["count": "\(requeued)"]) }
    }

    /// Runs every job handed in (`schedule(_:)`), each a child task in one of the work's
    /// lanes, until ferryd stops and the jobs already handed in have ended.
    func runJobs() async {
        await work.run { job in await self.perform(job) }
    }

    /// Delivers or launches for each session whose events were stored (`deliver(_:)`),
    /// starting with those a previous run left undelivered.
    func runDeliveries() async {
        do {
            for session in try await store.sessionsWithUndeliveredEvents() { deliver(session) }
        } catch {
            logger.error("cannot read sessions with undelivered events", metadata: ["error": "\(error)"])
        }
        await withDiscardingTaskGroup { group in
            for await session in deliveries {
                group.addTask { await self.eventsStored(in: session) }
            }
        }
    }

    /// Events were stored for `session`: the delivery service pushes them or launches the app.
    nonisolated func deliver(_ session: String) {
        deliveryQueue.yield(session)
    }

    /// Returns once ``shutdown()`` has finished.
    func stopped() async {
        await stoppedSignal.wait()
    }

    /// Stops scheduling, interrupts running transfers (they keep their resume points and wait
    /// for the next start), says goodbye to every client and shuts the engine down.
    public func shutdown() async {
        guard !isStopping else { return }
        isStopping = true
        logger.notice("ferryd stopping", metadata: ["running": "\(running.count)", "connections": "\(connections.count)"])
        wakeup.signal()  // the scheduler loop sees `isStopping` and starts nothing more
        for key in Array(running.keys) {
            await interrupt(key, because: .shutdown)
            _ = try? await store.updateTask(session: key.session, task: key.task, now: clock.now) { record in
                if record.state == .running { record.state = .waiting }
            }
        }
        let leaving = Array(connections.values)
        for connection in leaving {
            connection.close(reason: "ferryd is stopping", goodbye: FerryProtocolError(.internalError, "ferryd is stopping; connect again to start it"))
        }
        // The last replies (`stopping` among them) and goodbyes reach the sockets before
        // ferryd may exit: without this wait, `ferry daemon stop` lost its reply about once in
        // six runs. Bounded, for a client whose socket is full.
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskGroup(of: Void.self) { closes in
                    for connection in leaving { closes.addTask { try? await connection.channel.closeFuture.get() } }
                }
            }
            group.addTask { try? await Task.sleep(for: .seconds(2)) }
            await group.next()
            group.cancelAll()
        }
        for presence in sessions.values { presence.launch?.timer?.stop() }
        store.observeCommittedEvents(nil)  // the store may outlive this daemon (tests open another)
        try? await engine.shutdown()
        stoppedSignal.signal()
    }

    // MARK: Connections

    func connected(_ connection: ClientConnection) {
        if isStopping {
            connection.closeBecauseStopping()
            return
        }
        connections[connection.id] = connection
        activity.connections += 1
        connection.logger.debug("connected")
    }

    /// A disconnect (close, crash) frees every session the connection owned.
    func disconnected(_ connection: ClientConnection) async {
        connections[connection.id] = nil
        challenges.connectionClosed(connection.id)
        for session in Array(sessions.keys) where update(session, { $0.disconnect(connection.id) }) {
            connection.logger.info("session released", metadata: ["session": "\(session)"])
            deliver(session)  // events stored from now on need a launched app
        }
        if heapTrim.clientLeft() == .trimLater { schedule(.trimHeap) }
        connection.logger.debug("disconnected")
    }

    /// Whether `connection` may send `request`, which only an owner may send: it owns the
    /// session, or it watches a session of no app (made by `ferry` or another unregistered
    /// client: the user's own) and the request submits a task or suspends, resumes or cancels
    /// one. So `ferry download` and `ferry pause` work from a second shell while a `--wait` in
    /// the first owns the session. An app's session stays its owner's alone, as on the platform.
    func mayChange(_ request: FerryProtocol.Request, session: String, from connection: ClientConnection) async throws -> Bool {
        if owner(of: session) == connection.id { return true }
        let submits = if case .submit = request { true } else { false }
        guard submits || request.controlsOneTask, sessions[session]?.watchers.contains(connection.id) == true,
            let record = try await store.session(session)
        else { return false }
        return Self.isUnregistered(record.appBundleIdentifier)
    }

    /// The app of a session made by a process no installed manifest names.
    static func unregistered(client: String) -> String { "unregistered.\(client)" }
    static func isUnregistered(_ appBundleIdentifier: String) -> Bool { appBundleIdentifier.hasPrefix("unregistered.") }

    /// A silent connection is closed unless it owns or watches a session or waits for an
    /// answer: an app waiting for events may stay quiet for days.
    func closeIfIdle(_ connection: ClientConnection) {
        let holdsSession = sessions.values.contains { $0.progressTargets.contains(connection.id) }
        guard !holdsSession, connection.requestsInFlight == 0 else { return }
        let seconds = Int(configuration.idleTimeout)
        connection.close(
            reason: "idle for \(seconds) s without a session",
            goodbye: FerryProtocolError(.idleTimeout, "no request for \(seconds) s and no session: reconnect when needed"))
    }

    /// The owner let the session go: events now wait for a launch.
    func release(_ session: String) {
        update(session) { $0.release() }
        challenges.sessionReleased(session)
        deliver(session)
    }

    /// Changes one session's presence; an entry with nothing left to keep is dropped.
    @discardableResult
    func update<Result>(_ session: String, _ change: (inout SessionPresence) -> Result) -> Result {
        var presence = sessions[session] ?? SessionPresence()
        let hadOwnerAttached = presence.delivered != nil
        let result = change(&presence)
        sessions[session] = presence.isIdle ? nil : presence
        // No owner to send to (it left, attaches again, or invalidated the session): what memory
        // holds for it goes, live sends stop, and the next pump starts from the store.
        if hadOwnerAttached, presence.delivered == nil { outbox.drop(session) }
        return result
    }

    func owner(of session: String) -> UInt64? { sessions[session]?.owner }

    // MARK: Requests

    /// Serves the requests that arrived together on one connection, in order; a run of
    /// submissions is stored in one transaction (one disk sync), each still answered on its own.
    func handle(batch: [(id: UInt64, request: FerryProtocol.Request)], from connection: ClientConnection) async {
        var index = 0
        while index < batch.count {
            var run: [(id: UInt64, submission: TaskSubmission)] = []
            while index < batch.count, case .submit(let submission) = batch[index].request {
                run.append((batch[index].id, submission))
                index += 1
            }
            if run.count > 1 {
                await handleSubmissions(run, from: connection)
            } else if let single = run.first {
                await handle(id: single.id, .submit(single.submission), from: connection)
            } else {
                await handle(id: batch[index].id, batch[index].request, from: connection)
                index += 1
            }
        }
    }

    /// Submissions are handed to the store in slices of `submissionSlice`, all before the
    /// first is awaited: the store commits them in order, and the first slice's answers go out
    /// while the rest are written (so a client that keeps many submissions in flight gets
    /// answers, and sends more, sooner).
    static let submissionSlice = 128

    private func handleSubmissions(_ run: [(id: UInt64, submission: TaskSubmission)], from connection: ClientConnection) async {
        var sessions = SessionLookup()
        var handedIn: [(ids: [UInt64], write: PendingWrite<[Result<SubmitResult, FerryStoreError>]>)] = []
        for slice in stride(from: 0, to: run.count, by: Self.submissionSlice).map({ run[$0..<min($0 + Self.submissionSlice, run.count)] }) {
            var prepared: [(id: UInt64, task: NewTask)] = []
            for (id, submission) in slice {
                do {
                    let request = FerryProtocol.Request.submit(submission)
                    try request.validate()
                    guard try await mayChange(request, session: submission.sessionIdentifier, from: connection) else {
                        throw FerryProtocolError(.notOwner, "this connection does not own session \(submission.sessionIdentifier): attach with owner: true first")
                    }
                    // Each session is read once per run, not once per task.
                    guard let session = try await sessions.record(submission.sessionIdentifier, in: store) else {
                        throw unknownSession(submission.sessionIdentifier)
                    }
                    prepared.append((id, try await prepare(submission, session: session)))
                } catch {
                    connection.send(.failure(id: id, Self.protocolError(error)))
                }
            }
            if !prepared.isEmpty {
                handedIn.append((prepared.map(\.id), store.submitting(all: prepared.map(\.task), now: clock.now)))
            }
        }
        activity.requests += run.count
        for (ids, write) in handedIn {
            do {
                let results = try await write.value
                connection.send(zip(ids, results).map { id, result in
                    switch result {
                    case .success(let stored): .reply(id: id, .submitted(submitted(stored)))
                    case .failure(let error): .failure(id: id, Self.protocolError(error))
                    }
                })
            } catch {
                connection.send(ids.map { .failure(id: $0, Self.protocolError(error)) })
            }
        }
    }

    /// Serves one request and answers it (`reply` or `failure`) on the connection.
    func handle(id: UInt64, _ request: FerryProtocol.Request, from connection: ClientConnection) async {
        // A client that pipelined reads and left is owed nothing; what it asked to change is
        // still done (an acknowledge sent just before exiting counts).
        if request.onlyReads, !connection.channel.isActive { return }
        activity.requests += 1
        var logger = connection.logger
        logger[metadataKey: "request"] = "\(request.typeName)"
        if let session = request.sessionIdentifier { logger[metadataKey: "session"] = "\(session)" }
        do {
            try request.validate()
            if request.requiresOwner, let session = request.sessionIdentifier, try await !mayChange(request, session: session, from: connection) {
                throw FerryProtocolError(
                    .notOwner, "this connection does not own session \(session): attach with owner: true first")
            }
            let reply = try await serve(request, from: connection)
            connection.send(.reply(id: id, reply))
            logger.debug("served")
            await afterReply(request, from: connection)
        } catch {
            let failure = Self.protocolError(error)
            logger.info("request failed", metadata: ["error": "\(failure.shortDescription)"])
            connection.send(.failure(id: id, failure))
        }
    }

    /// The protocol's word for an error from the store, the engine or a check.
    static func protocolError(_ error: any Error) -> FerryProtocolError {
        switch error {
        case let error as FerryProtocolError:
            return error
        case let error as FerryStoreError:
            switch error.code {
            case .unknownSession: return FerryProtocolError(.unknownSession, error.message)
            case .unknownTask: return FerryProtocolError(.unknownTask, error.message)
            case .invalidTask, .constraintViolation: return FerryProtocolError(.badRequest, error.message)
            case .invalidTransition: return FerryProtocolError(.invalidTaskState, error.message)
            default: return FerryProtocolError(.internalError, "ferryd's store failed: \(error.message)")
            }
        default:
            return FerryProtocolError(.internalError, "ferryd failed: \(error)")
        }
    }

    /// Sends live progress to the owner and the watchers of its session (dropped for a
    /// client whose socket is full, or an owner with no room in its window: the next report
    /// carries the totals).
    func broadcast(_ progress: TaskProgress) {
        let session = progress.sessionIdentifier
        for id in sessions[session]?.progressTargets ?? [] {
            // Counted as no bytes: the byte window bounds events' payloads, progress is small.
            guard let connection = connections[id], connection.reserveMessages(CollectionOfOne(0), of: session) == 1 else { continue }
            if !connection.send(.progress(progress), droppable: true) { connection.unreserveMessages(1, of: session) }
        }
    }
}
