import FerryCore
import Foundation
@testable import FerryStore
import Testing

/// The one-statement completion: the same row as `updateTask` setting those fields would leave.
@Suite("Completing a task")
struct CompletionTests {
    @Test("completeTask sets the outcome, clears the error, resource and credentials, stores the events; an ended or unknown task is refused")
    func completion() async throws {
        try await withStore { (store, _) async throws in
            var upload = NewTask(
                sessionIdentifier: "s",
                task: TaskDescription(kind: .upload, request: TaskRequest(url: URL(string: "https://example.com/up")!, method: "PUT"), bodyFile: "/tmp/body.bin"))
            upload.credentials = [TaskCredential(realm: "r", user: "u", password: "p")]
            _ = try await store.submit(upload)
            _ = try await store.submit(download("d"))
            try await store.updateTask(session: "s", task: 1) { record in
                record.state = .running
                record.bytesExpectedToSend = 4_096
                record.lastErrorCode = "timedOut"
                record.lastErrorMessage = "the last attempt timed out"
                record.uploadResourceURL = "https://example.com/resource/7"
                record.uploadInteropVersion = 6
            }
            let now = Date(timeIntervalSince1970: 1_796_000_000)
            try await store.completeTask(
                session: "s", task: 1, TaskCompletion(responseStatus: 201, bytesSent: 4_096, bytesReceived: 12),
                appending: [event(1, "response"), event(1, "completed")], now: now)

            let done = try #require(try await store.task(session: "s", task: 1))
            #expect(done.state == .completed && done.responseStatus == 201)
            #expect(done.bytesSent == 4_096 && done.bytesReceived == 12)
            #expect(done.bytesExpectedToSend == 4_096 && done.bytesExpectedToReceive == 12)
            #expect(done.lastErrorCode == nil && done.lastErrorMessage == nil)
            #expect(done.uploadResourceURL == nil && done.uploadInteropVersion == nil)
            #expect(done.credentials.isEmpty, "a task's credentials leave the store when it ends")
            #expect(done.deliveredTo == nil && done.updatedAt == now)
            #expect(try await store.undeliveredEvents(in: "s").map(\.kind) == ["response", "completed"])

            // A download delivered elsewhere; nothing sent keeps its expected count.
            try await store.updateTask(session: "s", task: 2) { $0.bytesExpectedToSend = 0 }
            try await store.completeTask(
                session: "s", task: 2, TaskCompletion(responseStatus: 200, bytesSent: 0, bytesReceived: 5, deliveredTo: "/tmp/d (1).bin"))
            let delivered = try #require(try await store.task(session: "s", task: 2))
            #expect(delivered.deliveredTo == "/tmp/d (1).bin" && delivered.bytesExpectedToSend == 0 && delivered.state == .completed)

            let again = await #expect(throws: FerryStoreError.self) {
                try await store.completeTask(session: "s", task: 1, TaskCompletion(responseStatus: 200, bytesSent: 0, bytesReceived: 0),
                                             appending: [event(1, "twice")])
            }
            #expect(again?.code == .invalidTransition)
            #expect(again?.message.contains("is completed and cannot become completed") == true)
            #expect(try await store.undeliveredEvents(in: "s").map(\.kind) == ["response", "completed"], "a refused completion stores no event")
            let missing = await #expect(throws: FerryStoreError.self) {
                try await store.completeTask(session: "s", task: 99, TaskCompletion(responseStatus: 200, bytesSent: 0, bytesReceived: 0))
            }
            #expect(missing?.code == .unknownTask)
        }
    }
}

/// The one-statement start of an attempt: the same row as `updateTask` making that change.
@Suite("Starting an attempt")
struct StartAttemptTests {
    @Test("startAttempt leaves the row updateTask would; a task not waiting is left as it is (nil); an unknown one is refused")
    func start() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.submit(download("a"))
            _ = try await store.submit(download("b"))
            _ = try await store.submit(download("c"))
            let retryAt = Date(timeIntervalSince1970: 1_796_000_100)
            for task in [1, 2] {
                try await store.updateTask(session: "s", task: task) { record in
                    record.attemptCount = 2
                    record.nextAttemptAt = retryAt
                    record.retryReason = .backoff
                    record.lastErrorCode = "timedOut"
                }
            }
            try await store.updateTask(session: "s", task: 3) { $0.state = .suspended }
            let now = Date(timeIntervalSince1970: 1_796_000_200)

            let byUpdate = try await store.updateTask(session: "s", task: 1, now: now) { record in
                record.state = .running
                record.attemptCount += 1
                record.nextAttemptAt = nil
                record.retryReason = nil
            }
            let started = try #require(try await store.startAttempt(session: "s", task: 2, now: now))
            let stored = try #require(try await store.task(session: "s", task: 2))
            #expect(started == stored, "the record returned is the row stored")
            #expect(started.state == .running && started.attemptCount == 3 && started.nextAttemptAt == nil && started.retryReason == nil)
            #expect(started.lastErrorCode == "timedOut" && started.updatedAt == now)
            var expected = byUpdate
            expected.taskIdentifier = 2
            expected.task.destination = started.task.destination
            expected.task.request.url = started.task.request.url
            expected.task.options.taskDescription = started.task.options.taskDescription
            expected.createdAt = started.createdAt
            #expect(started == expected, "the same change as updateTask's, field for field")

            let suspendedBefore = try #require(try await store.task(session: "s", task: 3))
            #expect(try await store.startAttempt(session: "s", task: 3, now: now) == nil, "a suspended task is not started")
            #expect(try await store.task(session: "s", task: 3) == suspendedBefore)
            #expect(try await store.startAttempt(session: "s", task: 2, now: now) == nil, "a running task is not started twice")
            await #expect(throws: FerryStoreError.self) { try await store.startAttempt(session: "s", task: 99) }
        }
    }
}
