import FerryCore
import FerryProtocol
import FerryStore
import Foundation
import Logging
import NIOCore

// Between the protocol's values and the store's records: the store knows no protocol. Both
// share FerryCore's kind, state, header fields and retry policy, so nothing is converted by
// name and nothing falls back to a guess.

extension TaskRecord {
    var key: TaskKey { TaskKey(session: sessionIdentifier, task: taskIdentifier) }

    /// The task as the protocol reports it; `reason` says why it is not moving.
    func info(waitingReason reason: WaitingReason? = nil) -> TaskInfo {
        TaskInfo(
            sessionIdentifier: sessionIdentifier, taskIdentifier: taskIdentifier, task: task, state: state,
            bytesSent: bytesSent, bytesReceived: bytesReceived,
            bytesExpectedToSend: bytesExpectedToSend, bytesExpectedToReceive: bytesExpectedToReceive,
            attemptCount: attemptCount, nextAttemptDate: state == .waiting ? nextAttemptAt : nil,
            lastError: lastErrorCode.map { FerryProtocolError(FerryProtocolError.Code(rawValue: $0), lastErrorMessage ?? $0) },
            waitingReason: reason, responseStatus: responseStatus, deliveredTo: deliveredTo)
    }

    /// Why a task that is not running is not moving, from what the store knows; the
    /// scheduler adds the limits it met (`hostLimit`, `globalLimit`).
    func storedWaitingReason(now: Date) -> WaitingReason? {
        switch state {
        case .suspended:
            return WaitingReason(kind: .suspended, message: "suspended: resume the task to go on")
        case .waiting:
            let error = lastErrorCode.map { FerryProtocolError(FerryProtocolError.Code(rawValue: $0), lastErrorMessage ?? $0) }
            if let begin = task.earliestBeginDate, begin > now,
                nextAttemptAt.map({ $0 <= begin }) ?? true
            {
                return WaitingReason(kind: .beginDate, until: begin, message: "waiting for its begin date, \(begin.iso8601)")
            }
            if let next = nextAttemptAt, next > now {
                if retryReason == .retryAfter {
                    return WaitingReason(
                        kind: .retryAfter, until: next, error: error,
                        message: "the server asked to retry at \(next.iso8601) (\(lastErrorMessage ?? "Retry-After"))")
                }
                return WaitingReason(
                    kind: .backingOff, until: next, error: error,
                    message: "backing off until \(next.iso8601) after \(lastErrorCode ?? "an error"): \(lastErrorMessage ?? "")")
            }
            return WaitingReason(kind: .ready, message: "ready: starts as soon as a connection is free")
        default:
            return nil
        }
    }
}

extension Date {
    /// `2026-11-23T02:12:08Z`, for messages and logs (a value-type format: no formatter is
    /// built per call).
    var iso8601: String { formatted(.iso8601) }
}

/// A task's identity across sessions.
struct TaskKey: Hashable, Sendable, CustomStringConvertible {
    var session: String
    var task: Int
    var description: String { "\(session)#\(task)" }
}

extension SessionSummary {
    func info(isOwned: Bool) -> SessionInfo {
        SessionInfo(
            sessionIdentifier: session.identifier, appBundleIdentifier: session.appBundleIdentifier,
            sharedContainerIdentifier: session.sharedContainerIdentifier, isOwned: isOwned,
            taskCount: taskCount, undeliveredEventCount: undeliveredEventCount, keepsEvents: session.keepsEvents)
    }
}

extension EventKind {
    /// The event as the store keeps it: its type name and its JSON.
    func newEvent(session: String, task: Int?) throws -> NewEvent {
        let payload = try MessageCoder().encode(self)
        return NewEvent(sessionIdentifier: session, taskIdentifier: task, kind: typeName, payload: String(buffer: payload))
    }
}

/// A stored event on its way to its session's owner, with the moment its commit returned when
/// it goes as it commits (nil when it was read back from the store).
typealias OutgoingEvent = (record: EventRecord, committedAt: Date?)

extension EventRecord {
    /// The stored event as the protocol has it.
    func event() throws -> Event {
        let kind = try MessageCoder().decode(EventKind.self, from: ByteBuffer(string: payload))
        return Event(sequence: sequence, sessionIdentifier: sessionIdentifier, taskIdentifier: taskIdentifier, kind: kind, storedAt: createdAt)
    }

    /// Stored events of one session as `event` message payloads, in order, their kinds' JSON
    /// as stored (`MessageCoder.encodeEvents`); one of a kind this build does not know is
    /// logged and skipped.
    static func payloads(_ batch: [OutgoingEvent], logger: Logger) -> [ByteBuffer] {
        guard let session = batch.first?.record.sessionIdentifier else { return [] }
        let events = batch.compactMap { record, committedAt -> StoredEvent? in
            guard EventKind.isKnown(typeName: record.kind) else {
                logger.error("a stored event of an unknown kind; skipped", metadata: [
                    "session": "\(session)", "sequence": "\(record.sequence)", "kind": "\(record.kind)",
                ])
                return nil
            }
            return StoredEvent(
                sequence: record.sequence, taskIdentifier: record.taskIdentifier, kindJSON: record.payload,
                storedAt: record.createdAt, committedAt: committedAt)
        }
        return MessageCoder().encodeEvents(events, sessionIdentifier: session)
    }
}
