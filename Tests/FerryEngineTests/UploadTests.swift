import FerryCore
import FerryEngine
import FerryTestSupport
import Foundation
import Testing

@Suite("Uploads")
struct UploadTests {
    struct Receipt: Decodable {
        var bytes: Int
        var sha256: String
    }

    @Test("a file upload streams and the server receives the same bytes")
    func fileUpload() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("up.bin")
        let size = 3 << 20
        try Data(TestContent.bytes(count: size, seed: 11)).write(to: file)
        try await withServerAndEngine { server, engine in
            let observer = RecordingObserver()
            let result = try await engine.run(
                Transfer(request: Request(url: url(server, "/upload"), method: "PUT"), upload: .file(file), resumableUpload: .disabled),
                observer: observer)
            let receipt = try JSONDecoder().decode(Receipt.self, from: try #require(result.body))
            #expect(receipt.bytes == size)
            #expect(receipt.sha256 == TestContent.sha256Hex(count: size, seed: 11))
            let last = try #require(observer.sent.last)
            #expect(last.1 == Int64(size) && last.2 == Int64(size))
        }
    }

    @Test("data and chunked stream uploads arrive whole")
    func dataAndStream() async throws {
        try await withServerAndEngine { server, engine in
            let payload = Data(TestContent.bytes(count: 100_000, seed: 2))
            let fromData = try await engine.run(Transfer(request: Request(url: url(server, "/upload"), method: "POST"), upload: .data(payload)))
            #expect(try JSONDecoder().decode(Receipt.self, from: fromData.body!).sha256 == sha256Hex(payload))

            let streamed = try await engine.run(
                Transfer(
                    request: Request(url: url(server, "/upload"), method: "POST"),
                    upload: .stream(length: nil) {
                        AsyncThrowingStream { continuation in
                            for i in 0..<10 { continuation.yield(Array(payload[(i * 10_000)..<((i + 1) * 10_000)])) }
                            continuation.finish()
                        }
                    }))
            #expect(try JSONDecoder().decode(Receipt.self, from: streamed.body!).sha256 == sha256Hex(payload))
        }
    }

    @Test("a missing upload file is fileDoesNotExist, before anything is sent")
    func missingFile() async throws {
        try await withServerAndEngine { server, engine in
            await expectFerryError(.fileDoesNotExist) {
                try await engine.run(Transfer(request: Request(url: url(server, "/upload"), method: "PUT"), upload: .file(URL(fileURLWithPath: "/nonexistent/file"))))
            }
            #expect(server.requests.isEmpty)
        }
    }

    @Test("a POST whose connection dropped is not sent again, even with a retry policy")
    func postIsNotRepeated() async throws {
        try await withServerAndEngine { server, engine in
            var policy = RetryPolicy.standard
            policy.initialDelay = .milliseconds(10)
            await expectFerryError(.networkConnectionLost) {
                try await engine.run(
                    Transfer(request: Request(url: url(server, "/upload?dropAfter=50000"), method: "POST"),
                             upload: .data(Data(count: 200_000)), retry: policy, resumableUpload: .disabled))
            }
            #expect(server.requests.filter { $0.path == "/upload" }.count <= 1)
        }
    }
}
