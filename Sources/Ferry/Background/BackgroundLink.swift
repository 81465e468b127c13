import FerryDaemonClient
import FerryEngine
import FerryProtocol
import Foundation
import Logging
import NIOConcurrencyHelpers

/// A background session's tie to ferryd: the connection that owns the session there, the
/// requests each task control becomes, and the stream of events that drive the tasks here.
///
/// Task controls block until ferryd answered (`resume()` of a new task returns only once the
/// task is in ferryd's store). Events are handed to the tasks in order, and acknowledged only
/// after the delegate's callbacks for them have returned, so an event whose handling was
/// cut short by a crash comes again to the next process.
final class BackgroundLink: Sendable {
    let sessionIdentifier: String
    let places: BackgroundPlaces
    private let endpoint: DaemonEndpoint
    private let logger: Logger

    private struct State {
        var connection: DaemonConnection?
        /// Why the session cannot reach ferryd (in use by another process, not in the group…).
        var failure: FerryError?
        /// Events up to here were taken: a redelivered one is dropped.
        var lastHandledSequence: Int64 = 0
        /// Which delivered events may be acknowledged.
        var settlement = EventSettlement()
        var invalidated = false
        /// What is taken from ferryd and waits on the delegate (events whose acknowledgement
        /// has not left yet among them).
        var pacing = DeliveryPacing()
        /// The router, waiting for the delegate to catch up.
        var routerWaiting: CheckedContinuation<Void, Never>?
        /// The session asked to disconnect; the last event in flight finishes it.
        var leaving = false
        var identifiers = TaskIdentifierPool()
        /// Acknowledgements: at most one on its way to ferryd.
        var acknowledgements = AcknowledgementLine()
        /// Told of each acknowledgement ferryd took (its `upTo`).
        var acknowledged: (@Sendable (Int64) -> Void)?
    }
    private let state = NIOLockedValueBox(State())

    init(configuration: Configuration, logger: Logger) {
        let identifier = configuration.identifier ?? ""
        self.sessionIdentifier = identifier
        self.logger = logger
        let places = BackgroundPlaces.resolve(
            session: identifier, group: configuration.sharedContainerIdentifier, environment: configuration.ferryEnvironment)
        self.places = places
        self.endpoint = places.endpoint
    }

    var failure: FerryError? { state.withLockedValue { $0.failure } }

    /// Sets who hears of each acknowledgement ferryd took, with the sequence it reached.
    func onAcknowledged(_ body: @escaping @Sendable (Int64) -> Void) {
        state.withLockedValue { $0.acknowledged = body }
    }

    /// Connects and attaches as the session's owner. Returns the tasks ferryd has for it.
    func attach(configuration: Configuration) -> [TaskInfo] {
        if let problem = places.problem {
            state.withLockedValue { $0.failure = problem }
            return []
        }
        do throws(DaemonConnectionError) {
            let connection = try DaemonConnection.openAndWait(endpoint, clientName: Self.clientName, logger: logger)
            let tasks: [TaskInfo]
            do throws(DaemonConnectionError) {
                let attached = try connection.perform(waiting: .attach(ownerAttach(configuration, on: connection)))
                tasks = try connection.allTasks(waiting: TaskPages(attached: attached, session: sessionIdentifier))
            } catch {
                connection.closeNow()
                throw error
            }
            state.withLockedValue { s in
                s.connection = connection
                s.pacing.connected(paced: Self.paces(connection))
            }
            logger.info("attached to background session", metadata: ["session": "\(sessionIdentifier)", "tasks": "\(tasks.count)"])
            return tasks
        } catch {
            state.withLockedValue { $0.failure = Self.ferryError(error, session: sessionIdentifier) }
            logger.notice("cannot attach to background session", metadata: ["session": "\(sessionIdentifier)", "error": "\(error)"])
            return []
        }
    }

    /// Whether the connection's ferryd paces events (``DeliveryPacing``).
    private static func paces(_ connection: DaemonConnection) -> Bool {
        connection.welcome.protocolVersion >= ProtocolVersion.eventPacing
    }

    private func ownerAttach(_ configuration: Configuration, on connection: DaemonConnection) -> AttachSession {
        AttachSession(
            sessionIdentifier: sessionIdentifier,
            sharedContainerIdentifier: configuration.sharedContainerIdentifier,
            owner: true,
            httpMaximumConnectionsPerHost: min(max(configuration.httpMaximumConnectionsPerHost, 1), 64),
            networkAccess: configuration.networkAccess,
            transferOptions: configuration.transferOptions,
            sendsLaunchEvents: configuration.sessionSendsLaunchEvents,
            eventWindow: Self.paces(connection) ? DeliveryPacing.window : nil,
            eventByteWindow: Self.paces(connection) ? DeliveryPacing.byteWindow : nil)
    }

    /// The connection to ferryd was lost (ferryd crashed or was stopped) while the session
    /// lives: connects again, starting ferryd when nobody answers, and attaches as the owner.
    /// Tries after 0.1 s, then with backoff doubling to 10 s, until it succeeds, the session is
    /// invalidated, or the calling task is cancelled. Returns the new connection's messages
    /// and ferryd's tasks; ferryd then sends again every event not acknowledged.
    func reconnect(configuration: Configuration) async -> (messages: AsyncStream<DaemonMessage>, tasks: [TaskInfo])? {
        var delay = Duration.milliseconds(100)
        var attempt = 0
        while true {
            // Waits first: a process that is ending (it invalidates the session right after
            // losing ferryd) must not start ferryd and take the session back meanwhile.
            guard (try? await Task.sleep(for: delay)) != nil, !isEnding else { return nil }
            delay = min(delay * 2, .seconds(10))
            attempt += 1
            do throws(DaemonConnectionError) {
                let connection = try await DaemonConnection.open(endpoint, clientName: Self.clientName, logger: logger)
                guard !isEnding else {
                    await connection.close()
                    return nil
                }
                let tasks: [TaskInfo]
                do throws(DaemonConnectionError) {
                    let attached = try await connection.perform(.attach(ownerAttach(configuration, on: connection)))
                    tasks = try await connection.allTasks(TaskPages(attached: attached, session: sessionIdentifier))
                } catch {
                    await connection.close()
                    throw error
                }
                let kept = state.withLockedValue { s -> Bool in
                    guard !s.invalidated, !s.leaving else { return false }
                    s.connection = connection
                    s.pacing.connected(paced: Self.paces(connection))
                    return true
                }
                guard kept else {
                    await connection.close()
                    return nil
                }
                logger.notice("reconnected to ferryd", metadata: ["session": "\(sessionIdentifier)", "attempt": "\(attempt)", "tasks": "\(tasks.count)"])
                return (connection.pushedMessages, tasks)
            } catch where error.protocolCode == .backgroundSessionInUseByAnotherProcess {
                // Another process took the session meanwhile: it gets the events now.
                state.withLockedValue { $0.failure = Self.ferryError(error, session: sessionIdentifier) }
                logger.notice("cannot reconnect: another process owns the session", metadata: ["session": "\(sessionIdentifier)"])
                return nil
            } catch {
                logger.notice("reconnecting to ferryd failed; trying again", metadata: [
                    "session": "\(sessionIdentifier)", "attempt": "\(attempt)", "delay": "\(delay)", "error": "\(error)",
                ])
            }
        }
    }

    /// The session was invalidated or is leaving: it does not reconnect.
    private var isEnding: Bool { state.withLockedValue { $0.invalidated || $0.leaving } }

    /// The connection's pushed messages, once attached.
    var pushedMessages: AsyncStream<DaemonMessage>? { state.withLockedValue { $0.connection?.pushedMessages } }

    /// Performs a call and waits; a failure becomes the ``FerryError`` a task reports.
    func perform<Result>(_ call: DaemonCall<Result>) throws(FerryError) -> Result {
        let (connection, failure) = state.withLockedValue { ($0.connection, $0.failure) }
        if let failure { throw failure }
        guard let connection, !state.withLockedValue({ $0.invalidated }) else {
            throw FerryError(.backgroundSessionWasDisconnected, "the background session \(sessionIdentifier) is not connected to ferryd (it was invalidated)")
        }
        do throws(DaemonConnectionError) {
            return try connection.perform(waiting: call)
        } catch {
            throw Self.ferryError(error, session: sessionIdentifier)
        }
    }

    /// The next task's identifier: one kept from the last reservation, else a new block's first.
    func reserveTaskIdentifier() throws(FerryError) -> Int {
        if let kept = state.withLockedValue({ $0.identifiers.take() }) { return kept }
        let now = ContinuousClock.now
        let count = state.withLockedValue { $0.identifiers.blockToReserve(now: now) }
        let first = try perform(.reserveTaskIdentifier(in: sessionIdentifier, count: count))
        state.withLockedValue { $0.identifiers.refill(first: first, count: count, now: now) }
        return first
    }

    /// Whether `sequence` is new; marks it handled.
    func shouldHandle(sequence: Int64) -> Bool {
        state.withLockedValue { s in
            guard sequence > s.lastHandledSequence else { return false }
            s.lastHandledSequence = sequence
            return true
        }
    }

    /// Sends the delegate's answer to a challenge; returns once ferryd has it. A failure (the
    /// connection lost, the transfer gave up meanwhile) leaves the transfer to ferryd's default.
    func answer(_ challenge: TaskChallenge, with reply: ChallengeReply) async {
        guard let connection = state.withLockedValue({ $0.connection }) else { return }
        let (logger, session) = (self.logger, sessionIdentifier)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            connection.post(.answerChallenge(reply)) { result in
                if case .failure(let error) = result {
                    logger.notice("ferryd did not take a challenge's answer", metadata: [
                        "session": "\(session)", "task": "\(challenge.taskIdentifier)", "error": "\(error)",
                    ])
                }
                continuation.resume()
            }
        }
    }

    /// Tells ferryd every event up to `sequence`, and the `single` ones after it, were handled
    /// (it may delete them); returns once ferryd answered.
    func acknowledge(upTo sequence: Int64, single: [Int64] = []) async {
        await withCheckedContinuation { continuation in
            post(upTo: sequence, single: single) { continuation.resume() }
        }
    }

    /// ``acknowledge(upTo:single:)`` without waiting for ferryd's answer: the next event need
    /// not wait for the last one's commit (a session's events once waited in line, one commit
    /// each). One acknowledgement is on its way at a time; those made meanwhile are merged and
    /// leave together once it is answered (a thousand tasks ending together were a thousand
    /// writes in ferryd, beside their completions). ``close()`` waits for the line to empty.
    /// A failure means the events come again.
    private func post(upTo sequence: Int64, single: [Int64], answered: (@Sendable () -> Void)? = nil) {
        let ack = EventSettlement.Acknowledgement(upTo: sequence, single: single)
        let sendNow = state.withLockedValue { $0.acknowledgements.add(ack, answered: answered) }
        if let sendNow { transmit(sendNow) }
    }

    private func transmit(_ batch: AcknowledgementLine.Batch) {
        guard let connection = state.withLockedValue({ $0.connection }) else {
            answered(batch)
            return
        }
        let (logger, session) = (self.logger, sessionIdentifier)
        let ack = Acknowledge(
            sessionIdentifier: session, upToSequence: batch.acknowledgement.upTo,
            sequences: batch.acknowledgement.single.isEmpty ? nil : batch.acknowledgement.single)
        connection.post(.acknowledge(ack)) { result in
            switch result {
            case .failure(let error):
                logger.notice("acknowledge failed; the events will come again", metadata: [
                    "session": "\(session)", "sequence": "\(ack.upToSequence)", "error": "\(error)",
                ])
            case .success:
                self.state.withLockedValue { $0.acknowledged }?(ack.upToSequence)
            }
            self.answered(batch)
        }
    }

    /// `batch` was answered (or could not leave): its callers hear of it, and the next batch leaves.
    private func answered(_ batch: AcknowledgementLine.Batch) {
        for callback in batch.answered { callback() }
        let (next, idle) = state.withLockedValue { $0.acknowledgements.sent() }
        for waiter in idle { waiter.resume() }
        if let next { transmit(next) }
    }

    /// Returns once no acknowledgement waits to leave or for its answer.
    private func acknowledgementsSent() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLockedValue { $0.acknowledgements.waitUntilIdle(continuation) }
            if idle { continuation.resume() }
        }
    }

    /// The delegate's callbacks for events up to `sequence` have returned.
    ///
    /// Returns what may now be acknowledged, when anything new (``EventSettlement``).
    func markDelivered(_ sequence: Int64, task: Int?, settlesTask: Bool) -> EventSettlement.Acknowledgement? {
        state.withLockedValue { $0.settlement.delivered(sequence, task: task, settlesTask: settlesTask) }
    }

    /// The acknowledged point (redelivered events at or below it may be acknowledged again).
    var settledSequence: Int64 { state.withLockedValue { $0.settlement.settled } }

    /// Stops taking requests; with `cancelTasks`, ferryd cancels the session's tasks now.
    /// The connection stays open until ``disconnect()`` (after the delegate's queued callbacks).
    func invalidate(cancelTasks: Bool) {
        let connection = state.withLockedValue { s -> DaemonConnection? in
            s.invalidated = true
            return s.connection
        }
        if cancelTasks, let connection {
            try? connection.perform(waiting: .invalidate(Invalidate(sessionIdentifier: sessionIdentifier, cancelTasks: true)))
        }
    }

    /// The router took a message (an event or progress, with `bytes` of body) from the
    /// connection; ferryd hears of it now and then, and sends more (``DeliveryPacing``).
    func tookMessage(bytes: Int = 0) {
        let (total, connection) = state.withLockedValue { s in (s.pacing.took(bytes: bytes), s.connection) }
        guard let total, let connection else { return }
        let logger = self.logger
        connection.post(.taken(EventsTaken(sessionIdentifier: sessionIdentifier, count: total))) { result in
            if case .failure(let error) = result { logger.debug("telling ferryd what was taken failed", metadata: ["error": "\(error)"]) }
        }
    }

    /// What the current connection holds for the app: messages received from ferryd, taken by
    /// the router, and events and progress reports waiting on the delegate (for tests).
    var heldMessages: (received: Int, taken: Int, onDelegate: Int) {
        state.withLockedValue { s in
            (s.connection?.eventsAndProgressReceived ?? 0, s.pacing.taken, s.pacing.events + s.pacing.progress)
        }
    }

    /// The same in body bytes (data events), for tests.
    var heldBodyBytes: (received: Int, taken: Int, onDelegate: Int) {
        state.withLockedValue { s in
            (s.connection?.bodyBytesReceived ?? 0, s.pacing.takenBytes, s.pacing.eventBytes)
        }
    }

    /// Returns once the delegate has fewer than ``DeliveryPacing/inFlightLimit`` events and
    /// progress reports waiting (or the session is leaving). Only the router waits here.
    func delegateCaughtUp() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { s -> Bool in
                guard !s.leaving, s.pacing.delegateIsBehind else { return true }
                s.routerWaiting = waiter
                return false
            }
            if now { waiter.resume() }
        }
    }

    /// The router, resumed if the delegate has caught up (or the session leaves).
    private static func routerToResume(_ s: inout State) -> CheckedContinuation<Void, Never>? {
        guard s.leaving || s.pacing.delegateCaughtUp else { return nil }
        defer { s.routerWaiting = nil }
        return s.routerWaiting
    }

    /// An event carrying `bytes` of body is about to be handed to the delegate; false once the
    /// session is leaving (the event then waits in ferryd for the next process).
    func beginEvent(bytes: Int) -> Bool {
        state.withLockedValue { s in
            guard !s.leaving else { return false }
            s.pacing.eventBegan(bytes: bytes)
            return true
        }
    }

    /// A progress report may go to the delegate; false (it is dropped) while the delegate is behind.
    func beginProgress() -> Bool {
        state.withLockedValue { $0.pacing.progressBegan() }
    }

    /// A progress report's callbacks have returned.
    func endProgress() {
        let router = state.withLockedValue { s in
            s.pacing.progressEnded()
            return Self.routerToResume(&s)
        }
        router?.resume()
    }

    /// The event's callbacks have returned (it carried `bytes` of body): acknowledges what
    /// settled, and finishes a disconnect that waited for it.
    func endEvent(bytes: Int, acknowledging ack: EventSettlement.Acknowledgement?) async {
        if let ack { post(upTo: ack.upTo, single: ack.single) }
        let (closeNow, router) = state.withLockedValue { s in
            s.pacing.eventEnded(bytes: bytes)
            return (s.leaving && s.pacing.events == 0, Self.routerToResume(&s))
        }
        router?.resume()
        if closeNow { await close() }
    }

    /// Acknowledges what the delegate has seen, then leaves: tasks go on in ferryd and their
    /// later events wait for the next process (or launch the app). Runs on the delegate queue
    /// after the callbacks queued before it. An event whose callbacks ran but whose
    /// acknowledgement has not left yet (the app invalidated from its completion handler, or
    /// from another thread just then) is waited for, so nothing handed to the app comes again.
    func disconnect() async {
        let (waits, router) = state.withLockedValue { s in
            s.leaving = true
            return (s.pacing.events > 0, Self.routerToResume(&s))
        }
        router?.resume()
        if !waits { await close() }
    }

    private func close() async {
        await acknowledgementsSent()
        let (connection, delivered) = state.withLockedValue { s -> (DaemonConnection?, Int64) in
            defer { s.connection = nil }
            return (s.connection, s.settlement.settled)
        }
        guard let connection else { return }
        if delivered > 0 {
            try? await connection.perform(.acknowledge(Acknowledge(sessionIdentifier: sessionIdentifier, upToSequence: delivered)))
        }
        await connection.close()
    }

    static var clientName: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments.first ?? "ferry"
        return URL(fileURLWithPath: executable).lastPathComponent
    }

    static func ferryError(_ error: DaemonConnectionError, session: String) -> FerryError {
        switch error.protocolCode {
        case .backgroundSessionInUseByAnotherProcess?:
            return FerryError(.backgroundSessionInUseByAnotherProcess, "another process is connected to the background session \(session); only one may be", underlying: error)
        case .notInAppGroup?:
            return FerryError(.backgroundSessionRequiresSharedContainer, "this program's app is not in the session's app group: \(error)", underlying: error)
        case .undeclaredSession?:
            return FerryError(.backgroundSessionRequiresSharedContainer, "this extension's manifest does not name the session: \(error)", underlying: error)
        default:
            break
        }
        switch error {
        case .unreachable, .cannotStartDaemon, .busy, .connectionLost, .timedOut:
            return FerryError(.backgroundSessionWasDisconnected, "\(error)", underlying: error)
        case .refused, .failure:
            return FerryError(.unknown, "\(error)", underlying: error)
        }
    }
}
