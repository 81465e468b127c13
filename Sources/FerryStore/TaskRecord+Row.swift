import FerryCore
import Foundation

// The `task` table's columns and the record, mapped one by one in both directions: the one
// place that knows where each field of a task lives on disk. A value the columns cannot hold
// back (an unknown kind, a URL that is not one, a policy that is not one) fails the read,
// and the store names the row (`FerryStoreError.unreadableRow`).
extension TaskRecord: Codable {
    enum Column: String, CodingKey {
        case sessionIdentifier = "session_identifier", taskIdentifier = "task_identifier"
        case kind, state, url, method, headers, priority
        case bodyFile = "body_file", destinationFile = "destination_file"
        case bytesSent = "bytes_sent", bytesReceived = "bytes_received"
        case bytesExpectedToSend = "bytes_expected_to_send", bytesExpectedToReceive = "bytes_expected_to_receive"
        case resumeValidator = "resume_validator", resumeOffset = "resume_offset"
        case uploadResourceURL = "upload_resource_url", uploadInteropVersion = "upload_interop_version"
        case idempotencyKey = "idempotency_key", earliestBeginDate = "earliest_begin_date"
        case attemptCount = "attempt_count", nextAttemptAt = "next_attempt_at"
        case lastErrorCode = "last_error_code", lastErrorMessage = "last_error_message", responseStatus = "response_status"
        case retryReason = "retry_reason", resourceTimeout = "resource_timeout", requestTimeout = "request_timeout"
        case retryPolicy = "retry_policy", deliverTo = "deliver_to", deliveredTo = "delivered_to"
        case taskDescription = "task_description", createdAt = "created_at", updatedAt = "updated_at"
    }

    public init(from decoder: any Decoder) throws {
        let row = try decoder.container(keyedBy: Column.self)
        sessionIdentifier = try row.decode(String.self, forKey: .sessionIdentifier)
        taskIdentifier = try row.decode(Int.self, forKey: .taskIdentifier)
        let options = TaskOptions(
            idempotencyKey: try row.decodeIfPresent(String.self, forKey: .idempotencyKey),
            priority: try row.decode(Double.self, forKey: .priority),
            earliestBeginDate: try row.decodeIfPresent(Date.self, forKey: .earliestBeginDate),
            taskDescription: try row.decodeIfPresent(String.self, forKey: .taskDescription),
            timeoutIntervalForResource: try row.decodeIfPresent(Double.self, forKey: .resourceTimeout),
            timeoutIntervalForRequest: try row.decodeIfPresent(Double.self, forKey: .requestTimeout),
            retryPolicy: try row.decodeIfPresent(RetryPolicy.self, forKey: .retryPolicy),
            deliverTo: try row.decodeIfPresent(String.self, forKey: .deliverTo))
        task = TaskDescription(
            kind: try row.decode(TaskKind.self, forKey: .kind),
            request: TaskRequest(
                url: try row.decode(URL.self, forKey: .url), method: try row.decode(String.self, forKey: .method),
                headers: try row.decode(HeaderFields.self, forKey: .headers)),
            bodyFile: try row.decodeIfPresent(String.self, forKey: .bodyFile),
            destination: try row.decodeIfPresent(String.self, forKey: .destinationFile),
            options: options)
        state = try row.decode(TaskState.self, forKey: .state)
        bytesSent = try row.decode(Int64.self, forKey: .bytesSent)
        bytesReceived = try row.decode(Int64.self, forKey: .bytesReceived)
        bytesExpectedToSend = try row.decodeIfPresent(Int64.self, forKey: .bytesExpectedToSend)
        bytesExpectedToReceive = try row.decodeIfPresent(Int64.self, forKey: .bytesExpectedToReceive)
        resumeValidator = try row.decodeIfPresent(String.self, forKey: .resumeValidator)
        resumeOffset = try row.decodeIfPresent(Int64.self, forKey: .resumeOffset)
        uploadResourceURL = try row.decodeIfPresent(String.self, forKey: .uploadResourceURL)
        uploadInteropVersion = try row.decodeIfPresent(Int.self, forKey: .uploadInteropVersion)
        attemptCount = try row.decode(Int.self, forKey: .attemptCount)
        nextAttemptAt = try row.decodeIfPresent(Date.self, forKey: .nextAttemptAt)
        lastErrorCode = try row.decodeIfPresent(String.self, forKey: .lastErrorCode)
        lastErrorMessage = try row.decodeIfPresent(String.self, forKey: .lastErrorMessage)
        responseStatus = try row.decodeIfPresent(Int.self, forKey: .responseStatus)
        retryReason = try row.decodeIfPresent(RetryWait.self, forKey: .retryReason)
        deliveredTo = try row.decodeIfPresent(String.self, forKey: .deliveredTo)
        createdAt = try row.decode(Date.self, forKey: .createdAt)
        updatedAt = try row.decode(Date.self, forKey: .updatedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var row = encoder.container(keyedBy: Column.self)
        try row.encode(sessionIdentifier, forKey: .sessionIdentifier)
        try row.encode(taskIdentifier, forKey: .taskIdentifier)
        try row.encode(task.kind, forKey: .kind)
        try row.encode(state, forKey: .state)
        try row.encode(task.request.url, forKey: .url)
        try row.encode(task.request.method, forKey: .method)
        try row.encode(task.request.headers, forKey: .headers)
        try row.encode(task.bodyFile, forKey: .bodyFile)
        try row.encode(task.destination, forKey: .destinationFile)
        try row.encode(bytesSent, forKey: .bytesSent)
        try row.encode(bytesReceived, forKey: .bytesReceived)
        try row.encode(bytesExpectedToSend, forKey: .bytesExpectedToSend)
        try row.encode(bytesExpectedToReceive, forKey: .bytesExpectedToReceive)
        try row.encode(resumeValidator, forKey: .resumeValidator)
        try row.encode(resumeOffset, forKey: .resumeOffset)
        try row.encode(uploadResourceURL, forKey: .uploadResourceURL)
        try row.encode(uploadInteropVersion, forKey: .uploadInteropVersion)
        try row.encode(task.idempotencyKey, forKey: .idempotencyKey)
        try row.encode(task.priority, forKey: .priority)
        try row.encode(task.earliestBeginDate, forKey: .earliestBeginDate)
        try row.encode(attemptCount, forKey: .attemptCount)
        try row.encode(nextAttemptAt, forKey: .nextAttemptAt)
        try row.encode(lastErrorCode, forKey: .lastErrorCode)
        try row.encode(lastErrorMessage, forKey: .lastErrorMessage)
        try row.encode(responseStatus, forKey: .responseStatus)
        try row.encode(retryReason, forKey: .retryReason)
        try row.encode(task.timeoutIntervalForResource, forKey: .resourceTimeout)
        try row.encode(task.timeoutIntervalForRequest, forKey: .requestTimeout)
        try row.encode(task.retryPolicy, forKey: .retryPolicy)
        try row.encode(task.deliverTo, forKey: .deliverTo)
        try row.encode(deliveredTo, forKey: .deliveredTo)
        try row.encode(task.taskDescription, forKey: .taskDescription)
        try row.encode(createdAt, forKey: .createdAt)
        try row.encode(updatedAt, forKey: .updatedAt)
    }
}
