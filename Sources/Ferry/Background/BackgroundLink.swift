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

    /// Connects and attaches as the session's owner. Returns the tasks ferryd has for it.
    func attach(configuration: Configuration) -> [TaskInfo] {
        if let problem = places.problem {
            state.withLockedValue { $0.failure = problem }
            return []
        }
        do throws(DaemonConnectionError) {
            let connection = try DaemonConnection.openAndWait(endpoint, clientName: Self.clientName, logger: logger)
            let attach = AttachSession(
                sessionIdentifier: sessionIdentifier,
                sharedContainerIdentifier: configuration.sharedContainerIdentifier,
                owner: true,
                httpMaximumConnectionsPerHost: min(max(configuration.httpMaximumConnectionsPerHost, 1), 64))
            guard case .attached(let attached) = try connection.sendAndWait(.attach(attach)) else {
                connection.closeNow()
                throw .connectionLost("ferryd answered attach with something else")
            }
            var tasks = attached.tasks
            var after = attached.nextAfterTaskIdentifier
            while let next = after {  // bounded: each page moves `after` forward
                guard case .tasks(let page) = try connection.sendAndWait(
                    .listTasks(ListTasks(sessionIdentifier: sessionIdentifier, afterTaskIdentifier: next)))
                else { break }
                tasks += page.tasks
                after = page.nextAfterTaskIdentifier.flatMap { $0 > next ? $0 : nil }
            }
            state.withLockedValue { $0.connection = connection }
            logger.info("attached to background session", metadata: ["session": "\(sessionIdentifier)", "tasks": "\(tasks.count)"])
            return tasks
        } catch {
            state.withLockedValue { $0.failure = Self.ferryError(error, session: sessionIdentifier) }
            logger.notice("cannot attach to background session", metadata: ["session": "\(sessionIdentifier)", "error": "\(error)"])
            return []
        }
    }

    /// The connection's pushed messages, once attached.
    var pushedMessages: AsyncStream<DaemonMessage>? { state.withLockedValue { $0.connection?.pushedMessages } }

    /// Sends a request and waits; a failure becomes the ``FerryError`` a task reports.
    func call(_ request: FerryProtocol.Request) throws(FerryError) -> Reply {
        let (connection, failure) = state.withLockedValue { ($0.connection, $0.failure) }
        if let failure { throw failure }
        guard let connection, !state.withLockedValue({ $0.invalidated }) else {
            throw FerryError(.backgroundSessionWasDisconnected, "the background session \(sessionIdentifier) is not connected to ferryd (it was invalidated)")
        }
        do throws(DaemonConnectionError) {
            return try connection.sendAndWait(request)
        } catch {
            throw Self.ferryError(error, session: sessionIdentifier)
        }
    }

    func reserveTaskIdentifier() throws(FerryError) -> Int {
        guard case .taskIdentifier(let identifier) = try call(.reserveTaskIdentifier(SessionReference(sessionIdentifier: sessionIdentifier))) else {
            throw FerryError(.unknown, "ferryd did not give a task identifier")
        }
        return identifier
    }

    /// Whether `sequence` is new; marks it handled.
    func shouldHandle(sequence: Int64) -> Bool {
        state.withLockedValue { s in
            guard sequence > s.lastHandledSequence else { return false }
            s.lastHandledSequence = sequence
            return true
        }
    }

    /// Tells ferryd every event up to `sequence` was handled (it may delete them).
    func acknowledge(upTo sequence: Int64) async {
        guard let connection = state.withLockedValue({ $0.connection }) else { return }
        do throws(DaemonConnectionError) {
            _ = try await connection.send(.acknowledge(Acknowledge(sessionIdentifier: sessionIdentifier, upToSequence: sequence)))
        } catch {
            logger.notice("acknowledge failed; the events will come again", metadata: ["session": "\(sessionIdentifier)", "sequence": "\(sequence)", "error": "\(error)"])
        }
    }

    /// The delegate's callbacks for events up to `sequence` have returned.
    ///
    /// Returns the point up to which events may now be acknowledged, when it moved
    /// (``EventSettlement``).
    func markDelivered(_ sequence: Int64, task: Int?, settlesTask: Bool) -> Int64? {
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
            _ = try? connection.sendAndWait(.invalidate(Invalidate(sessionIdentifier: sessionIdentifier, cancelTasks: true)))
        }
    }

    /// Acknowledges what the delegate has seen, then leaves: tasks go on in ferryd and their
    /// later events wait for the next process (or launch the app). Runs on the delegate queue
    /// after the callbacks queued before it, so nothing handed to the app is sent again.
    func disconnect() async {
        let (connection, delivered) = state.withLockedValue { s -> (DaemonConnection?, Int64) in
            defer { s.connection = nil }
            return (s.connection, s.settlement.settled)
        }
        guard let connection else { return }
        if delivered > 0 {
            _ = try? await connection.send(.acknowledge(Acknowledge(sessionIdentifier: sessionIdentifier, upToSequence: delivered)))
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
        default:
            break
        }
        switch error {
        case .unreachable, .cannotStartDaemon, .connectionLost, .timedOut:
            return FerryError(.backgroundSessionWasDisconnected, "\(error)", underlying: error)
        case .refused, .failure:
            return FerryError(.unknown, "\(error)", underlying: error)
        }
    }
}

/// Which delivered events may be acknowledged. A task's events are acknowledged only once the
/// event that settles it (its completion or failure, or a download's file handed over) was
/// delivered: a process that goes away in the middle of a task (an extension that exits right
/// after resume(), the response seen but not the completion) leaves *all* of the task's events
/// to the next process, which then sees the response, the body and the completion rather than
/// a completion without a response. Acknowledgements are cumulative, so the point is the end
/// of the delivered prefix whose tasks are settled.
struct EventSettlement {
    /// Events up to here may be acknowledged.
    private(set) var settled: Int64 = 0
    /// Delivered events after `settled`, oldest first, whose task is not settled yet; a nil
    /// task: nothing here waits for the event.
    private var unsettled: [(sequence: Int64, task: Int?)] = []
    /// Settled tasks that still have events in `unsettled` behind an unsettled one.
    private var settledTasks: Set<Int> = []

    /// Records the delivery of event `sequence` of `task`; returns the new point when it moved.
    mutating func delivered(_ sequence: Int64, task: Int?, settlesTask: Bool) -> Int64? {
        unsettled.append((sequence, settlesTask ? nil : task))
        if settlesTask, let task { settledTasks.insert(task) }
        let before = settled
        while let first = unsettled.first, first.task.map({ settledTasks.contains($0) }) ?? true {
            settled = max(settled, first.sequence)
            unsettled.removeFirst()
        }
        settledTasks.formIntersection(unsettled.compactMap(\.task))
        return settled > before ? settled : nil
    }
}
