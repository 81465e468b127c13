import FerryCore
import Foundation
import GRDB

// The `task` table's columns and the record, mapped one by one in both directions: the one
// place that knows where each field of a task lives on disk. A value the columns cannot hold
// back (an unknown kind, a URL that is not one, a policy that is not one) fails the read,
// and the store names the row (`FerryStoreError.unreadableRow`).
extension TaskRecord: StoredRecord {
    static let table = StoredTable(
        "task",
        columns: [
            "session_identifier", "task_identifier", "kind", "state", "url", "method", "headers", "body_file",
            "destination_file", "bytes_sent", "bytes_received", "bytes_expected_to_send", "bytes_expected_to_receive",
            "resume_validator", "resume_offset", "upload_resource_url", "upload_interop_version", "idempotency_key",
            "priority", "earliest_begin_date", "attempt_count", "next_attempt_at", "last_error_code",
            "last_error_message", "response_status", "retry_reason", "resource_timeout", "request_timeout",
            "retry_policy", "deliver_to", "delivered_to", "task_description", "created_at", "updated_at", "expected_sha256", "credentials",
        ],
        identity: ["session_identifier", "task_identifier"])

    init(row: inout RowReader) throws {
        sessionIdentifier = try row.value()
        taskIdentifier = try row.value()
        let kind: TaskKind = try row.named()
        state = try row.named()
        let request = TaskRequest(url: try row.url(), method: try row.value(), headers: try row.json())
        let bodyFile: String? = try row.optional()
        let destination: String? = try row.optional()
        bytesSent = try row.value()
        bytesReceived = try row.value()
        bytesExpectedToSend = try row.optional()
        bytesExpectedToReceive = try row.optional()
        resumeValidator = try row.optional()
        resumeOffset = try row.optional()
        uploadResourceURL = try row.optional()
        uploadInteropVersion = try row.optional()
        let idempotencyKey: String? = try row.optional()
        let priority: Double = try row.value()
        let earliestBeginDate = try row.optionalDate()
        attemptCount = try row.value()
        nextAttemptAt = try row.optionalDate()
        lastErrorCode = try row.optional()
        lastErrorMessage = try row.optional()
        responseStatus = try row.optional()
        retryReason = try row.optionalNamed()
        let resourceTimeout: Double? = try row.optional()
        let requestTimeout: Double? = try row.optional()
        let retryPolicy: RetryPolicy? = try row.optionalJSON()
        let deliverTo: String? = try row.optional()
        deliveredTo = try row.optional()
        let taskDescription: String? = try row.optional()
        createdAt = try row.date()
        updatedAt = try row.date()
        let expectedSHA256: String? = try row.optional()
        credentials = try row.optionalJSON(remembered: false) ?? []
        task = TaskDescription(
            kind: kind, request: request, bodyFile: bodyFile, destination: destination,
            options: TaskOptions(
                idempotencyKey: idempotencyKey, priority: priority, earliestBeginDate: earliestBeginDate,
                taskDescription: taskDescription, timeoutIntervalForResource: resourceTimeout,
                timeoutIntervalForRequest: requestTimeout, retryPolicy: retryPolicy, deliverTo: deliverTo,
                expectedSHA256: expectedSHA256))
    }

    func columnValues() throws -> [DatabaseValue] {
        // Fields read straight (no key paths), the URL as its text (GRDB's URL conversion
        // makes an NSURL first): this runs once per submission and per change.
        let options = task.options
        return [
            sessionIdentifier.databaseValue, taskIdentifier.databaseValue, task.kind.rawValue.databaseValue,
            state.rawValue.databaseValue, task.request.url.absoluteString.databaseValue, task.request.method.databaseValue,
            // Most tasks have no headers of their own: no encoder for those.
            task.request.headers.count == 0 ? "[]".databaseValue : try JSONColumn.value(task.request.headers),
            task.bodyFile.storedValue, task.destination.storedValue, bytesSent.databaseValue, bytesReceived.databaseValue,
            bytesExpectedToSend.storedValue, bytesExpectedToReceive.storedValue, resumeValidator.storedValue,
            resumeOffset.storedValue, uploadResourceURL.storedValue, uploadInteropVersion.storedValue,
            options.idempotencyKey.storedValue, options.priority.databaseValue, options.earliestBeginDate?.storedValue ?? .null,
            attemptCount.databaseValue, nextAttemptAt?.storedValue ?? .null, lastErrorCode.storedValue,
            lastErrorMessage.storedValue, responseStatus.storedValue, retryReason?.rawValue.databaseValue ?? .null,
            options.timeoutIntervalForResource.storedValue, options.timeoutIntervalForRequest.storedValue,
            try JSONColumn.value(options.retryPolicy), options.deliverTo.storedValue, deliveredTo.storedValue,
            options.taskDescription.storedValue, createdAt.storedValue, updatedAt.storedValue, options.expectedSHA256.storedValue,
            credentials.isEmpty ? .null : try JSONColumn.value(credentials),
        ]
    }
}

extension TaskState {
    /// The states a task ends in, as an SQL list (`'completed', 'failed', 'cancelled'`): the
    /// queries that pick ended tasks take it from ``isFinal``, not from a list of their own.
    static let finalStatesSQL = allCases.filter(\.isFinal).map { "'\($0.rawValue)'" }.joined(separator: ", ")
    /// A condition true of a task that has not ended (`state <> 'completed' AND …`), from the
    /// same ``isFinal``: comparisons, where `NOT IN` a list of three made SQLite 3.40 build a
    /// temporary index each time the statement ran (a completion's, once a task).
    static let notEndedSQL = allCases.filter(\.isFinal).map { "state <> '\($0.rawValue)'" }.joined(separator: " AND ")
}
