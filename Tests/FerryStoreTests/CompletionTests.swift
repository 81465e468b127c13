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
            let body = try await store.completeTask(
                session: "s", task: 1, TaskCompletion(responseStatus: 201, bytesSent: 4_096, bytesReceived: 12),
                appending: [event(1, "response"), event(1, "completed")], now: now)
            #expect(body == "/tmp/body.bin")

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
            _ = try await store.completeTask(
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
