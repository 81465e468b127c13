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
}
