// NginxServer: Debian's nginx on loopback serves files, ranges, If-Range and WebDAV PUT.
import FerryTestSupport
import Foundation
import Testing

@Suite("NginxServer")
struct NginxServerTests {
    @Test func servesRangesAndRoundTripsPut() async throws {
        let nginx = try await NginxServer.start()
        let bytes = TestContent.bytes(count: 2_000_000, seed: 77)
        let sha = TestContent.sha256Hex(count: 2_000_000, seed: 77)
        try Data(bytes).write(to: nginx.root.appendingPathComponent("big.bin"))

        let full = try await curl([nginx.baseURL + "/big.bin"])
        #expect(full.status == 200)
        #expect(full.sha256 == sha)
        let etag = try #require(full.header("etag"))
        #expect(full.header("accept-ranges") == "bytes")

        let range = try await curl(["-H", "Range: bytes=1000000-", "-H", "If-Range: \(etag)", nginx.baseURL + "/big.bin"])
        #expect(range.status == 206)
        #expect(range.body == Array(bytes[1_000_000...]))
        let changed = try await curl(["-H", "Range: bytes=1000000-", "-H", "If-Range: \"nope\"", nginx.baseURL + "/big.bin"])
        #expect(changed.status == 200)
        #expect(changed.body.count == bytes.count)

        let file = try tempFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let put = try await curl(["-T", file, nginx.baseURL + "/upload/deep/dir/put.bin"])
        #expect(put.status == 201)
        let stored = try Data(contentsOf: nginx.uploadDirectory.appendingPathComponent("deep/dir/put.bin"))
        #expect(stored.count == bytes.count)
        let back = try await curl([nginx.baseURL + "/upload/deep/dir/put.bin"])
        #expect(back.sha256 == sha)

        let log = nginx.accessLog()
        #expect(log.count == 5)
        #expect(log[1].hasPrefix("GET /big.bin HTTP/1.1 206 \"bytes=1000000-\" \"\(etag.replacingOccurrences(of: "\"", with: "\\x22"))\""))
        #expect(log[3].hasPrefix("PUT /upload/deep/dir/put.bin HTTP/1.1 201"))
        try await nginx.stop()
        #expect(!FileManager.default.fileExists(atPath: nginx.prefix.path))
    }

    @Test func tlsAndHTTP2() async throws {
        let nginx = try await NginxServer.start(tls: true)
        try Data("hello".utf8).write(to: nginx.root.appendingPathComponent("hi.txt"))
        let url = try #require(nginx.httpsBaseURL) + "/hi.txt"
        let ca = try #require(nginx.caCertificatePEMPath)
        let r = try await curl(["--http2", "--cacert", ca, url])
        #expect(r.exitCode == 0)
        #expect(r.heads.last?.first?.hasPrefix("HTTP/2 200") == true)
        #expect(String(decoding: r.body, as: UTF8.self) == "hello")
        let untrusted = try await curl([url])
        #expect(untrusted.exitCode == 60)  // certificate not trusted without --cacert
        try await nginx.stop()
    }
}
