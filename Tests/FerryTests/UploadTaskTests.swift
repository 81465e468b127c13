import Ferry
import FerryTestSupport
import Foundation
import Testing

@Suite("Upload tasks")
struct UploadTaskTests {
    struct Receipt: Decodable {
        var bytes: Int
        var sha256: String
    }

    @Test("upload from a file reports body progress ending with the totals and returns the server's reply")
    func fromFile() async throws {
        try await withServer { server in
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("photo.bin")
            let size = 2 << 20
            try Data(TestContent.bytes(count: size, seed: 50)).write(to: file)
            let delegate = RecordingDelegate()
            let session = Session(configuration: .default, delegate: delegate)
            let task = session.uploadTask(with: Request(url: server.url("/upload"), method: "PUT"), fromFile: file)
            task.resume()
            _ = await delegate.nextCompletion()
            let receipt = try JSONDecoder().decode(Receipt.self, from: delegate.data)
            #expect(receipt.sha256 == TestContent.sha256Hex(count: size, seed: 50))
            let last = try #require(delegate.sent.last)
            #expect(last.1 == Int64(size) && last.2 == Int64(size))
            #expect(task.countOfBytesSent == Int64(size))
            session.finishTasksAndInvalidate()
        }
    }

    @Test("upload(for:from:) with Data and with an async stream")
    func asyncUploads() async throws {
        try await withServer { server in
            let payload = Data(TestContent.bytes(count: 50_000, seed: 51))
            let (reply, _) = try await Session.shared.upload(for: Request(url: server.url("/upload"), method: "POST"), from: payload)
            #expect(try JSONDecoder().decode(Receipt.self, from: reply).bytes == 50_000)

            let chunks = AsyncStream<[UInt8]> { continuation in
                for i in 0..<5 { continuation.yield(Array(payload[(i * 10_000)..<((i + 1) * 10_000)])) }
                continuation.finish()
            }
            let (streamed, _) = try await Session.shared.upload(for: Request(url: server.url("/upload"), method: "POST"), from: chunks, length: nil)
            #expect(try JSONDecoder().decode(Receipt.self, from: streamed).sha256 == TestContent.sha256Hex(count: 50_000, seed: 51))
        }
    }

    /// A resumable upload to a server speaking the draft, `body` given the task once the
    /// server has created the upload resource (the body is still on its way).
    private func withResumableUpload(size: Int, seed: UInt64, _ body: (DraftV8UploadServer, Session, UploadTask) async throws -> Void) async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("photo.bin")
        try Data(TestContent.bytes(count: size, seed: seed)).write(to: file)
        // Appends of 1 MiB: the upload is still running when the test acts on it.
        let server = try await DraftV8UploadServer.start(options: .init(limits: .init(maxSize: 1 << 30, maxAppendSize: 1 << 20, maxAge: 3600)))
        let session = Session(configuration: .ephemeral)
        do {
            let task = session.uploadTask(with: Request(url: URL(string: server.baseURL + "/upload/photo")!, method: "POST"), fromFile: file)
            task.resume()
            try await poll(until: "two PATCH appends at the server", timeout: .seconds(30), every: .milliseconds(5),
                           observed: "requests: \(server.requests.map(\.method))") {
                server.requests.filter { $0.method == "PATCH" }.count >= 2
            }
            #expect(server.creations == 1)
            try await body(server, session, task)
            session.finishTasksAndInvalidate()
            try await server.shutdown()
        } catch {
            session.invalidateAndCancel()
            try? await server.shutdown()
            throw error
        }
    }

    @Test("cancelling a resumable upload deletes its resource on the server; the task completes as cancelled")
    func cancelDeletesTheUploadResource() async throws {
        try await withResumableUpload(size: 48 << 20, seed: 52) { server, _, task in
            task.cancel()
            await task.waitUntilCompleted()
            #expect(task.error?.code == .cancelled)
            let delete = try #require(server.requests.last { $0.method == "DELETE" }, "\(server.requests.map(\.method))")
            #expect(delete.uri.hasPrefix(DraftV8UploadServer.resourcePath))
            #expect(server.completedUploads.isEmpty)
        }
    }

    @Test("a suspended resumable upload continues from the server's offset on resume, in the same resource")
    func suspendThenResumeContinues() async throws {
        let size = 48 << 20
        try await withResumableUpload(size: size, seed: 53) { server, _, task in
            task.suspend()
            try await Task.sleep(for: .milliseconds(50))
            task.resume()
            await task.waitUntilCompleted()
            #expect(task.error == nil)
            #expect(server.creations == 1, "no second upload resource: \(server.requests.map(\.method))")
            #expect(server.requests.contains { $0.method == "HEAD" }, "asked the server for its offset")
            #expect(!server.requests.contains { $0.method == "DELETE" })
            let stored = try #require(server.completedUploads["photo"])
            #expect(try TestFiles.sha256Hex(ofFile: URL(fileURLWithPath: stored.path)) == TestContent.sha256Hex(count: size, seed: 53))
        }
    }
}
