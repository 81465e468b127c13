import FerryCore
import Foundation

/// A task as a submission's answer carries it, read without `JSONDecoder`: an app handing
/// tasks over one by one decoded each answer on its connection's event loop, ahead of the
/// events waiting there, and the decoder's work for them was a seventh of the app's CPU. As
/// with the other messages, anything it does not fully understand (an error, a value the
/// decoder would refuse or read otherwise) is left to the decoder.
extension FrequentMessageReader {
    static func taskInfo(_ fields: Fields) -> TaskInfo? {
        guard fields["lastError"].isAbsent, let waiting = fields.optional("waitingReason", { name in fields.object(name).flatMap(waitingReason) }),
              let session = fields.string("sessionIdentifier"), let identifier = fields.integer("taskIdentifier"),
              let state = fields.string("state").flatMap(TaskState.init(rawValue:)), let task = taskDescription(fields),
              let sent = fields.integer("bytesSent"), let received = fields.integer("bytesReceived"),
              let toSend = fields.optionalInteger("bytesExpectedToSend"), let toReceive = fields.optionalInteger("bytesExpectedToReceive"),
              let attempts = fields.integer("attemptCount"), let nextAttempt = fields.optionalNumber("nextAttemptDate"),
              let status = fields.optionalInteger("responseStatus"), let deliveredTo = fields.optionalString("deliveredTo"),
              let pending = fields.optional("eventsPending", { name in fields.bool(name) })
        else { return nil }
        return TaskInfo(
            sessionIdentifier: session, taskIdentifier: Int(identifier), task: task, state: state, bytesSent: sent, bytesReceived: received,
            bytesExpectedToSend: toSend, bytesExpectedToReceive: toReceive, attemptCount: Int(attempts),
            nextAttemptDate: nextAttempt.map(Date.init(timeIntervalSince1970:)),
            waitingReason: waiting, responseStatus: status.map(Int.init), deliveredTo: deliveredTo, eventsPending: pending)
    }

    /// Why a task waits, without an error (one with an error is the decoder's).
    private static func waitingReason(_ fields: Fields) -> WaitingReason? {
        guard fields["error"].isAbsent, let kind = fields.string("kind"), let message = fields.string("message"),
              let host = fields.optionalString("host"), let until = fields.optionalNumber("until")
        else { return nil }
        return WaitingReason(kind: WaitingReason.Kind(rawValue: kind), until: until.map(Date.init(timeIntervalSince1970:)), host: host, message: message)
    }

    /// ``TaskDescription``'s fields, its options' beside them.
    private static func taskDescription(_ fields: Fields) -> TaskDescription? {
        guard let kind = fields.string("kind").flatMap(TaskKind.init(rawValue:)), let request = fields.object("request"),
              let url = request.string("url").flatMap({ URL(string: $0) }), let method = request.string("method"),
              let headers = request.headers("headers"),
              let bodyFile = fields.optionalString("bodyFile"), let destination = fields.optionalString("destination"),
              let key = fields.optionalString("idempotencyKey"), let priority = fields.optionalNumber("priority"),
              let begin = fields.optionalNumber("earliestBeginDate"), let text = fields.optionalString("taskDescription"),
              let resourceTimeout = fields.optionalNumber("timeoutIntervalForResource"),
              let requestTimeout = fields.optionalNumber("timeoutIntervalForRequest"),
              let policy = fields.optional("retryPolicy", { name in fields.object(name).flatMap(retryPolicy) }),
              let deliverTo = fields.optionalString("deliverTo"), let digest = fields.optionalString("expectedSHA256")
        else { return nil }
        let options = TaskOptions(
            idempotencyKey: key, priority: priority ?? 0.5, earliestBeginDate: begin.map(Date.init(timeIntervalSince1970:)), taskDescription: text,
            timeoutIntervalForResource: resourceTimeout, timeoutIntervalForRequest: requestTimeout, retryPolicy: policy,
            deliverTo: deliverTo, expectedSHA256: digest)
        return TaskDescription(
            kind: kind, request: TaskRequest(url: url, method: method, headers: headers), bodyFile: bodyFile, destination: destination, options: options)
    }

    /// ``RetryPolicy``'s decoding, with its checks: nil for what it refuses.
    private static func retryPolicy(_ fields: Fields) -> RetryPolicy? {
        func duration(_ name: String) -> Duration? {
            guard let seconds = fields.number(name), seconds.isFinite, seconds >= 0, seconds <= 365 * 24 * 3600 else { return nil }
            return .milliseconds(Int64((seconds * 1000).rounded()))
        }
        guard let attempts = fields.integer("maximumAttempts"), attempts >= 1, let initial = duration("initialDelay"),
              let maximum = duration("maximumDelay"), let retryAfter = duration("maximumRetryAfter"),
              let statuses = fields.integers("retryableStatuses"), statuses.allSatisfy({ (100...599).contains($0) })
        else { return nil }
        return RetryPolicy(
            maximumAttempts: Int(attempts), initialDelay: initial, maximumDelay: maximum,
            retryableStatuses: Set(statuses.map(Int.init)), maximumRetryAfter: retryAfter)
    }
}

extension Optional where Wrapped == JSONValue {
    /// Missing or null: what the decoder reads as nil.
    var isAbsent: Bool {
        switch self {
        case nil, .null?: true
        default: false
        }
    }
}
