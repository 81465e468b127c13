// `ferry put` round trips, and both commands against nginx.
import FerryTestSupport
import Foundation
import Testing

@Suite(.serialized) struct PutTests {
    @Test(arguments: ["PUT", "POST"])
    func uploadRoundTripsBySHA256(method: String) async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let count = 3_000_000
        try Data(TestContent.bytes(count: count, seed: 11)).write(to: URL(fileURLWithPath: scratch.path("up.bin")))
        let expected = TestContent.sha256Hex(count: count, seed: 11)

        let run = try await FerryBinary.run(
            ["put", scratch.path("up.bin"), "\(server.baseURL)/upload/up.bin", "--method", method, "-H", "Content-Type: application/x-test"],
            in: scratch.url)
        #expect(run.status == 0, "\(run.stderr)")
        // Standard output is the server's response body: its own account of what arrived.
        let reply = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "stdout: \(run.stdout)")
        #expect(reply["sha256"] as? String == expected)
        #expect(reply["bytes"] as? Int == count)
        #expect(reply["method"] as? String == method)
        #expect(reply["contentType"] as? String == "application/x-test")

        let json = try await FerryBinary.run(["put", scratch.path("up.bin"), "\(server.baseURL)/upload/again", "-X", method, "--json"], in: scratch.url)
        #expect(json.status == 0, "\(json.stderr)")
        let summary = try #require(json.json, "stdout: \(json.stdout)")
        #expect(summary["status"] as? Int == 200)
        #expect(summary["bytes"] as? Int == count)
        #expect(summary["sha256"] as? String == expected)
        #expect(server.requests.last { $0.path == "/upload/again" }?.bodySHA256 == expected)
        try await server.shutdown()
    }

    @Test func uploadHTTPErrorExitsWith22() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        try Data("hello".utf8).write(to: URL(fileURLWithPath: scratch.path("small.txt")))
        let run = try await FerryBinary.run(["put", scratch.path("small.txt"), "\(server.baseURL)/upload?status=413"], in: scratch.url)
        #expect(run.status == 22, "\(run.stderr)")
        #expect(run.stderr.contains("413"))
        #expect(run.stdout.isEmpty)
        try await server.shutdown()
    }

    @Test func getAndPutAgainstNginx() async throws {
        let nginx = try await NginxServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let count = 5_000_000
        try Data(TestContent.bytes(count: count, seed: 21)).write(to: nginx.root.appendingPathComponent("big.bin"))
        let expected = TestContent.sha256Hex(count: count, seed: 21)

        let get = try await FerryBinary.run(["get", "\(nginx.baseURL)/big.bin", "-o", scratch.path("big.bin"), "--json"], in: scratch.url)
        #expect(get.status == 0, "\(get.stderr)")
        #expect(try sha256Hex(ofFile: scratch.path("big.bin")) == expected)

        // Cut the file short by hand and continue it with the validator nginx sent.
        let etag = try Self.etag(nginx: nginx)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch.path("big.bin")))
        try handle.truncate(atOffset: 1_234_567)
        try handle.close()
        let record = ["url": "\(nginx.baseURL)/big.bin", "validator": etag, "bytes": 1_234_567] as [String: Any]
        try JSONSerialization.data(withJSONObject: record).write(to: URL(fileURLWithPath: scratch.path("big.bin.ferry-resume")))
        let resumed = try await FerryBinary.run(["get", "\(nginx.baseURL)/big.bin", "-o", scratch.path("big.bin"), "--continue", "--json"], in: scratch.url)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.json?["resumedFrom"] as? Int == 1_234_567)
        #expect(try sha256Hex(ofFile: scratch.path("big.bin")) == expected)
        #expect(nginx.accessLog().last?.contains(" 206 ") == true)

        let put = try await FerryBinary.run(["put", scratch.path("big.bin"), "\(nginx.baseURL)/upload/copy.bin", "--quiet"], in: scratch.url)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(try sha256Hex(ofFile: nginx.uploadDirectory.appendingPathComponent("copy.bin").path) == expected)
        try await nginx.stop()
    }

    /// nginx's ETag for a file: `"<mtime hex>-<size hex>"`.
    static func etag(nginx: NginxServer) throws -> String {
        let served = nginx.root.appendingPathComponent("big.bin").path
        let attributes = try FileManager.default.attributesOfItem(atPath: served)
        let mtime = Int((attributes[.modificationDate] as! Date).timeIntervalSince1970)
        let size = (attributes[.size] as! NSNumber).intValue
        return "\"\(String(mtime, radix: 16))-\(String(size, radix: 16))\""
    }
}
