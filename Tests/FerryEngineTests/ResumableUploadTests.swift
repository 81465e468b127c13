import FerryCore
import FerryEngine
import FerryTestSupport
import Foundation
import Testing

/// Against a server built on swift-nio-extras' NIOResumableUpload, not against our own code.
@Suite("Resumable uploads (IETF draft) against NIOResumableUpload")
struct ResumableUploadTests {
    struct Receipt: Decodable {
        var bytes: Int
        var sha256: String
    }

    func upload(
        versions: [Int], dropAfter: Int?, size: Int = 3 << 20, seed: UInt64, connectionsPerHost: Int = 6
    ) async throws -> (ResumableUploadServer, TransferResult, RecordingObserver) {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("photo.jpg")
        try Data(TestContent.bytes(count: size, seed: seed)).write(to: file)
        let server = try await ResumableUploadServer.start()
        if let dropAfter { server.dropNextUpload(afterBytes: dropAfter) }
        var configuration = EngineConfiguration()
        configuration.resumableUploadVersions = versions
        configuration.maximumConnectionsPerHost = connectionsPerHost
        let engine = try TransferEngine(configuration: configuration)
        defer { Task { try? await engine.shutdown() } }
        var policy = RetryPolicy.standard
        policy.initialDelay = .milliseconds(20)
        let observer = RecordingObserver()
        let result = try await engine.run(
            Transfer(request: Request(url: URL(string: server.baseURL + "/upload/photo")!, method: "POST"), upload: .file(file), retry: policy),
            observer: observer)
        return (server, result, observer)
    }

    @Test("the newest version is negotiated down to what the server speaks, and an upload cut halfway is resumed with HEAD + PATCH", arguments: [[8, 6, 5, 3]])
    func negotiatedAndResumed(versions: [Int]) async throws {
        let size = 3 << 20
        let (server, result, observer) = try await upload(versions: versions, dropAfter: 1_000_000, size: size, seed: 21)
        defer { Task { try? await server.shutdown() } }
        #expect(result.response.statusCode == 200)
        let receipt = try JSONDecoder().decode(Receipt.self, from: try #require(result.body))
        #expect(receipt.bytes == size)
        #expect(receipt.sha256 == TestContent.sha256Hex(count: size, seed: 21))
        #expect(server.completedUploads["photo"]?.sha256 == TestContent.sha256Hex(count: size, seed: 21))

        let methods = server.requests.map(\.method)
        #expect(methods.contains("HEAD"))
        #expect(methods.filter { $0 == "PATCH" }.count == 2)
        let versionsSent = Set(server.requests.compactMap { $0.header("Upload-Draft-Interop-Version") })
        #expect(versionsSent.contains("6"))
        // The second PATCH starts where the server said it stopped, not at zero.
        let offsets = server.requests.filter { $0.method == "PATCH" }.compactMap { $0.header("Upload-Offset").flatMap(Int.init) }
        #expect(offsets.first == 0)
        #expect((offsets.last ?? 0) > 0)
        // Bytes re-sent after the cut: only the rest.
        let patched = server.requests.filter { $0.method == "PATCH" }.map(\.bodyLength).reduce(0, +)
        #expect(patched < size + 1_100_000)
        #expect(observer.resumedAt.contains { $0 > 0 })
    }

    @Test("each interop version the library speaks (3, 5, 6) completes an interrupted upload", arguments: [3, 5, 6])
    func eachVersion(version: Int) async throws {
        let (server, result, _) = try await upload(versions: [version], dropAfter: 500_000, size: 2 << 20, seed: UInt64(version))
        defer { Task { try? await server.shutdown() } }
        #expect(result.response.statusCode == 200)
        #expect(server.completedUploads["photo"]?.sha256 == TestContent.sha256Hex(count: 2 << 20, seed: UInt64(version)))
        #expect(server.requests.allSatisfy { $0.method == "POST" && $0.header("Upload-Draft-Interop-Version") == nil || $0.header("Upload-Draft-Interop-Version") == "\(version)" })
        if version == 3 {
            #expect(server.requests.contains { $0.header("Upload-Incomplete") != nil })
        } else {
            #expect(server.requests.contains { $0.header("Upload-Complete") != nil })
        }
    }

    @Test("one connection per host: the transfer's own turn serves its first request, the rest wait their turn, and it completes")
    func onePerHost() async throws {
        let size = 1 << 20
        let (server, result, _) = try await upload(versions: [8, 6, 5, 3], dropAfter: 300_000, size: size, seed: 9, connectionsPerHost: 1)
        defer { Task { try? await server.shutdown() } }
        #expect(result.response.statusCode == 200)
        #expect(server.completedUploads["photo"]?.sha256 == TestContent.sha256Hex(count: size, seed: 9))
        #expect(server.requests.contains { $0.method == "HEAD" }, "resumed after the cut")
    }

    @Test("a server that does not speak the protocol gets one plain upload")
    func fallback() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("big.bin")
        let size = 2 << 20
        try Data(TestContent.bytes(count: size, seed: 8)).write(to: file)
        try await withServerAndEngine { server, engine in
            let result = try await engine.run(Transfer(request: Request(url: url(server, "/upload"), method: "PUT"), upload: .file(file)))
            let receipt = try JSONDecoder().decode(Receipt.self, from: try #require(result.body))
            #expect(receipt.sha256 == TestContent.sha256Hex(count: size, seed: 8))
            let puts = server.requests.filter { $0.method == "PUT" }
            #expect(puts.count == 1)
            #expect(puts.first?.header("Upload-Complete") == nil && puts.first?.header("Upload-Draft-Interop-Version") == nil)
        }
    }
}
