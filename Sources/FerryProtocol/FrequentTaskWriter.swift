import FerryCore
import Foundation

/// The two replies ferryd writes for every task an app hands over and handles, `submitted` and
/// `acknowledged`, and the app's `submit` request, without `JSONEncoder`: with tasks handed over
/// one by one, the encoder's work for them was about a twentieth of ferryd's CPU and an eighth
/// of the app's. The text is the encoder's (keys sorted
/// byte by byte, the same escapes and numbers), so each decodes to the same value. A task
/// holding what only the encoder writes (an error, also as a waiting reason's, a number JSON
/// cannot hold) goes through the encoder, as every other reply does.
extension MessageCoder {
    /// The reply's JSON text, or nil when the encoder writes it.
    static func frequentReply(id: UInt64, _ reply: Reply) -> String? {
        var body = JSONObject()
        switch reply {
        case .submitted(let submitted):
            guard let task = taskObject(submitted.task) else { return nil }
            body.add("existing", submitted.existing ? "true" : "false")
            body.add("task", task)
            body.add("type", #""submitted""#)
        case .acknowledged(let acknowledged):
            if let sequences = acknowledged.sequences {
                body.add("sequences", "[" + sequences.map(String.init).joined(separator: ",") + "]")
            }
            body.add("sessionIdentifier", quoted(acknowledged.sessionIdentifier))
            body.add("type", #""acknowledged""#)
            body.add("upToSequence", String(acknowledged.upToSequence))
        default:
            return nil
        }
        var message = JSONObject()
        message.add("reply", body.text)
        message.add("requestID", String(id))
        message.add("type", #""reply""#)
        return message.text
    }

    /// A task as one object, its description's fields beside its own (``TaskInfo``'s coding).
    static func taskObject(_ info: TaskInfo) -> String? {
        guard info.lastError == nil, info.waitingReason?.error == nil else { return nil }
        var object = JSONObject()
        guard add(info.task, to: &object) else { return nil }
        object.add("attemptCount", String(info.attemptCount))
        if let bytes = info.bytesExpectedToReceive { object.add("bytesExpectedToReceive", String(bytes)) }
        if let bytes = info.bytesExpectedToSend { object.add("bytesExpectedToSend", String(bytes)) }
        object.add("bytesReceived", String(info.bytesReceived))
        object.add("bytesSent", String(info.bytesSent))
        if let path = info.deliveredTo { object.add("deliveredTo", quoted(path)) }
        if let pending = info.eventsPending { object.add("eventsPending", pending ? "true" : "false") }
        if let date = info.nextAttemptDate {
            guard let seconds = number(date.timeIntervalSince1970) else { return nil }
            object.add("nextAttemptDate", seconds)
        }
        if let status = info.responseStatus { object.add("responseStatus", String(status)) }
        object.add("sessionIdentifier", quoted(info.sessionIdentifier))
        object.add("state", quoted(info.state.rawValue))
        object.add("taskIdentifier", String(info.taskIdentifier))
        if let reason = info.waitingReason {
            var waiting = JSONObject()
            if let host = reason.host { waiting.add("host", quoted(host)) }
            waiting.add("kind", quoted(reason.kind.rawValue))
            waiting.add("message", quoted(reason.message))
            if let until = reason.until {
                guard let seconds = number(until.timeIntervalSince1970) else { return nil }
                waiting.add("until", seconds)
            }
            object.add("waitingReason", waiting.text)
        }
        return object.text
    }

    /// A submission's members, the description's beside its own (``TaskSubmission``'s coding);
    /// nil with credentials (the encoder's).
    static func submissionObject(_ submission: TaskSubmission) -> JSONObject? {
        guard submission.credentials == nil else { return nil }
        var object = JSONObject()
        guard add(submission.task, to: &object) else { return nil }
        if let data = submission.resumeData { object.add("resumeData", #"""# + data.base64EncodedString() + #"""#) }
        object.add("sessionIdentifier", quoted(submission.sessionIdentifier))
        if let identifier = submission.taskIdentifier { object.add("taskIdentifier", String(identifier)) }
        return object
    }

    /// ``TaskDescription``'s fields (and its options') into `object`; false for a number JSON
    /// cannot hold.
    static func add(_ task: TaskDescription, to object: inout JSONObject) -> Bool {
        let options = task.options
        if let path = task.bodyFile { object.add("bodyFile", quoted(path)) }
        if let path = options.deliverTo { object.add("deliverTo", quoted(path)) }
        if let path = task.destination { object.add("destination", quoted(path)) }
        if let date = options.earliestBeginDate {
            guard let seconds = number(date.timeIntervalSince1970) else { return false }
            object.add("earliestBeginDate", seconds)
        }
        if let digest = options.expectedSHA256 { object.add("expectedSHA256", quoted(digest)) }
        if let key = options.idempotencyKey { object.add("idempotencyKey", quoted(key)) }
        object.add("kind", quoted(task.kind.rawValue))
        guard let priority = number(options.priority) else { return false }
        object.add("priority", priority)
        var request = #"{"headers":"# + headersArray(task.request.headers)
        request += #","method":"# + quoted(task.request.method)
        request += #","url":"# + quoted(task.request.url.absoluteString) + "}"
        object.add("request", request)
        if let policy = options.retryPolicy {
            guard let text = retryPolicyObject(policy) else { return false }
            object.add("retryPolicy", text)
        }
        if let text = options.taskDescription { object.add("taskDescription", quoted(text)) }
        if let seconds = options.timeoutIntervalForRequest {
            guard let text = number(seconds) else { return false }
            object.add("timeoutIntervalForRequest", text)
        }
        if let seconds = options.timeoutIntervalForResource {
            guard let text = number(seconds) else { return false }
            object.add("timeoutIntervalForResource", text)
        }
        return true
    }

    /// ``RetryPolicy``'s coding: durations as seconds, statuses sorted.
    static func retryPolicyObject(_ policy: RetryPolicy) -> String? {
        guard let initial = number(policy.initialDelay.timeInterval), let maximum = number(policy.maximumDelay.timeInterval),
            let retryAfter = number(policy.maximumRetryAfter.timeInterval)
        else { return nil }
        var object = JSONObject()
        object.add("initialDelay", initial)
        object.add("maximumAttempts", String(policy.maximumAttempts))
        object.add("maximumDelay", maximum)
        object.add("maximumRetryAfter", retryAfter)
        object.add("retryableStatuses", "[" + policy.retryableStatuses.sorted().map(String.init).joined(separator: ",") + "]")
        return object.text
    }

    /// A `Double` as the encoder writes it (a whole number without `.0`); nil for one JSON
    /// cannot hold.
    static func number(_ value: Double) -> String? {
        guard value.isFinite else { return nil }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return String(describing: value)
    }
}

/// An object's members as JSON text, written in key order whatever order they were added in.
struct JSONObject {
    private var members: [(key: String, value: String)] = []

    mutating func add(_ key: String, _ json: String) { members.append((key, json)) }

    var text: String {
        "{" + members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { "\"" + $0.key + "\":" + $0.value }.joined(separator: ",") + "}"
    }
}
