import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// A background upload that the server holds as a resumable upload resource: suspending keeps
/// the resource (the upload continues from the server's offset), cancelling deletes it there.
@Suite("Cancelled uploads (real process)", .serialized)
struct UploadCancelTests {
    @Test("cancel deletes the task's upload resource on the server; suspend + resume keeps it and finishes in it")
    func cancelDeletesSuspendKeeps() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        // Appends of 1 MiB: each upload is still running when the test acts on it.
        let server = try await DraftV8UploadServer.start(options: .init(limits: .init(maxSize: 1 << 30, maxAppendSize: 1 << 20, maxAge: 3600)))
        let size = 48 << 20
        let body = try makeFile(ferryd.root, "body.bin", count: size, seed: 7)
        let client = try await RawClient.connected(to: ferryd.socketPath, name: "app")
        guard case .attached = try await client.request(.attach("s1")) else { throw TestFailure("not attached") }

        func patches() -> Int { server.requests.filter { $0.method == "PATCH" }.count }
        func waitForAppends(_ count: Int) async throws {
            try await poll(until: "\(count) PATCH appends at the server", timeout: .seconds(5), every: .milliseconds(5),
                           observed: "requests: \(server.requests.map(\.method))") { patches() >= count }
        }

        // Suspend, resume: one resource, asked for its offset, stored whole.
        let kept = try await client.submit(.upload("s1", server.baseURL + "/upload/kept", file: body, method: "POST"))
        try await waitForAppends(2)
        try await client.request(.suspend(TaskReference(sessionIdentifier: "s1", taskIdentifier: kept.taskIdentifier)))
        try await client.request(.resume(TaskReference(sessionIdentifier: "s1", taskIdentifier: kept.taskIdentifier)))
        let keptEvents = try await client.events(untilFinished: [kept.taskIdentifier])
        #expect(keptEvents.last?.kind == .completed)
        #expect(server.creations == 1 && server.requests.contains { $0.method == "HEAD" })
        #expect(!server.requests.contains { $0.method == "DELETE" })
        let stored = try #require(server.completedUploads["kept"])
        #expect(try TestFiles.sha256Hex(ofFile: URL(fileURLWithPath: stored.path)) == TestContent.sha256Hex(count: size, seed: 7))

        // Cancel: the server is told to free what it holds.
        let before = patches()
        let dropped = try await client.submit(.upload("s1", server.baseURL + "/upload/dropped", file: body, method: "POST"))
        try await waitForAppends(before + 2)
        try await client.request(.cancel(TaskReference(sessionIdentifier: "s1", taskIdentifier: dropped.taskIdentifier)))
        try await poll(until: "ferryd to DELETE the cancelled upload's resource", timeout: .seconds(5), every: .milliseconds(5),
                       observed: "requests: \(server.requests.map(\.method))") {
            server.requests.contains { $0.method == "DELETE" }
        }
        #expect(server.creations == 2)
        #expect(server.completedUploads["dropped"] == nil)
        try await server.shutdown()
    }
}
