// TestHTTPServer against curl: content, ranges, validators and each misbehaviour.
import FerryTestSupport
import Foundation
import Testing

@Suite("TestHTTPServer")
struct TestHTTPServerTests {
    @Test func bytesMatchTestContent() async throws {
        let server = try await TestHTTPServer.start()
        let n = 3_000_001
        let r = try await curl([server.baseURL + "/bytes/\(n)?seed=42"])
        #expect(r.exitCode == 0)
        #expect(r.body.count == n)
        #expect(r.sha256 == TestContent.sha256Hex(count: n, seed: 42))
        #expect(r.header("etag") == "\"\(n)-42-0\"")
        #expect(r.header("accept-ranges") == "bytes")
        #expect(r.header("last-modified") == "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(Array(r.body[1000..<1100]) == TestContent.bytes(offset: 1000, count: 100, seed: 42))
        try await server.shutdown()
    }

    @Test func rangesAndIfRange() async throws {
        let server = try await TestHTTPServer.start()
        let url = server.baseURL + "/bytes/1000?seed=5"
        let mid = try await curl(["-H", "Range: bytes=100-199", url])
        #expect(mid.status == 206)
        #expect(mid.header("content-range") == "bytes 100-199/1000")
        #expect(mid.body == TestContent.bytes(offset: 100, count: 100, seed: 5))
        let open = try await curl(["-H", "Range: bytes=990-", url])
        #expect(open.body == TestContent.bytes(offset: 990, count: 10, seed: 5))
        let suffix = try await curl(["-H", "Range: bytes=-3", url])
        #expect(suffix.header("content-range") == "bytes 997-999/1000")
        let unsatisfiable = try await curl(["-H", "Range: bytes=1000-", url])
        #expect(unsatisfiable.status == 416)
        #expect(unsatisfiable.header("content-range") == "bytes */1000")

        let etagMatch = try await curl(["-H", "Range: bytes=500-", "-H", "If-Range: \"1000-5-0\"", url])
        #expect(etagMatch.status == 206)
        let etagMismatch = try await curl(["-H", "Range: bytes=500-", "-H", "If-Range: \"1000-5-1\"", url])
        #expect(etagMismatch.status == 200)
        #expect(etagMismatch.body.count == 1000)
        let date = "Mon, 01 Jan 2024 00:00:00 GMT"
        let dateMatch = try await curl(["-H", "Range: bytes=500-", "-H", "If-Range: \(date)", url + "&etag=none"])
        #expect(dateMatch.status == 206)
        #expect(dateMatch.header("etag") == nil)
        let noValidators = try await curl(["-H", "Range: bytes=500-", "-H", "If-Range: \(date)", url + "&validators=none"])
        #expect(noValidators.status == 200)
        #expect(noValidators.header("last-modified") == nil)
        let noRanges = try await curl(["-H", "Range: bytes=500-", url + "&ranges=no"])
        #expect(noRanges.status == 200)
        #expect(noRanges.header("accept-ranges") == nil)

        let recorded = server.requests.first { $0.header("if-range") == "\"1000-5-1\"" }
        #expect(recorded?.header("range") == "bytes=500-")
        try await server.shutdown()
    }

    @Test func versionChangesETagAndContent() async throws {
        let server = try await TestHTTPServer.start()
        let v2 = try await curl([server.baseURL + "/bytes/5000?seed=9&version=2"])
        #expect(v2.header("etag") == "\"5000-9-2\"")
        #expect(v2.header("last-modified") == "Wed, 03 Jan 2024 00:00:00 GMT")
        #expect(v2.sha256 == TestContent.sha256Hex(count: 5000, seed: TestContent.seed(9, version: 2)))
        #expect(v2.sha256 != TestContent.sha256Hex(count: 5000, seed: 9))
        try await server.shutdown()
    }

    @Test func dropAfterCutsAndResumeSucceeds() async throws {
        let server = try await TestHTTPServer.start()
        let n = 2_000_000
        let url = server.baseURL + "/bytes/\(n)?seed=1&dropAfter=700000"
        let first = try await curl([url])
        #expect(first.exitCode == 18)  // partial file: fewer bytes than Content-Length
        #expect(first.body.count == 700_000)
        let rest = try await curl(["-H", "Range: bytes=700000-", "-H", "If-Range: \"\(n)-1-0\"", url])
        #expect(rest.status == 206)
        #expect(first.body + rest.body == TestContent.bytes(count: n, seed: 1))
        let log = server.requests
        #expect(log.count == 2)
        #expect(log.last?.header("range") == "bytes=700000-")
        #expect(server.totalConnections == 2)

        let always = try await curl(["-H", "Range: bytes=10-", server.baseURL + "/bytes/100000?dropAlways=50"])
        #expect(always.exitCode == 18)
        #expect(always.body.count == 50)
        try await server.shutdown()
    }

    @Test func resourceChangesBetweenRequests() async throws {
        let server = try await TestHTTPServer.start()
        let url = server.baseURL + "/bytes/3000?seed=4&versionKey=doc"
        let v0 = try await curl([url])
        #expect(v0.header("etag") == "\"3000-4-0\"")
        server.setResourceVersion(3, key: "doc")
        let resumed = try await curl(["-H", "Range: bytes=100-", "-H", "If-Range: \"3000-4-0\"", url])
        #expect(resumed.status == 200)
        #expect(resumed.header("etag") == "\"3000-4-3\"")
        #expect(resumed.sha256 == TestContent.sha256Hex(count: 3000, seed: TestContent.seed(4, version: 3)))
        try await server.shutdown()
    }

    @Test func lyingLengthChunkedAndDigest() async throws {
        let server = try await TestHTTPServer.start()
        let short = try await curl([server.baseURL + "/bytes/1000?lengthDelta=10"])
        #expect(short.exitCode == 18)
        #expect(short.header("content-length") == "1010")
        #expect(short.body.count == 1000)
        let chunked = try await curl([server.baseURL + "/bytes/300000?seed=3&chunked=1"])
        #expect(chunked.exitCode == 0)
        #expect(chunked.header("transfer-encoding") == "chunked")
        #expect(chunked.sha256 == TestContent.sha256Hex(count: 300_000, seed: 3))
        let good = try await curl([server.baseURL + "/bytes/1000?seed=3&digest=good"])
        let expected = "sha-256=:" + Data(TestContent.sha256(count: 1000, seed: 3)).base64EncodedString() + ":"
        #expect(good.header("repr-digest") == expected)
        #expect(good.header("content-digest") == expected)
        let bad = try await curl([server.baseURL + "/bytes/1000?seed=3&digest=bad"])
        #expect(bad.header("repr-digest") != expected)
        #expect(bad.header("repr-digest")?.hasPrefix("sha-256=:") == true)
        let partial = try await curl(["-H", "Range: bytes=10-", server.baseURL + "/bytes/1000?seed=3&digest=good"])
        #expect(partial.header("repr-digest") == expected)
        #expect(partial.header("content-digest") == nil)
        try await server.shutdown()
    }

    @Test func stallAndDrip() async throws {
        let server = try await TestHTTPServer.start()
        let stalled = try await curl(["--max-time", "2", server.baseURL + "/bytes/5000?stallAfter=1000&stallSeconds=5"])
        #expect(stalled.exitCode == 28)  // timed out
        #expect(stalled.body.count == 1000)
        let clock = ContinuousClock()
        let start = clock.now
        let dripped = try await curl([server.baseURL + "/bytes/4000?seed=2&drip=8000"])
        #expect(clock.now - start >= .milliseconds(400))
        #expect(dripped.sha256 == TestContent.sha256Hex(count: 4000, seed: 2))
        try await server.shutdown()
    }

    @Test func statusFlakyAndRetryAfter() async throws {
        let server = try await TestHTTPServer.start()
        let teapot = try await curl([server.baseURL + "/status/418?retryAfter=7"])
        #expect(teapot.status == 418)
        #expect(teapot.header("retry-after") == "7")
        let url = server.baseURL + "/flaky/k1?failures=2&status=503&retryAfter=1&then=/bytes/100%3Fseed%3D4"
        let a = try await curl([url])
        let b = try await curl([url])
        let c = try await curl([url])
        #expect(a.status == 503 && b.status == 503)
        #expect(a.header("retry-after") == "1")
        #expect(c.status == 200)
        #expect(c.sha256 == TestContent.sha256Hex(count: 100, seed: 4))
        let times = server.requests.filter { $0.path == "/flaky/k1" }.map(\.receivedAt)
        #expect(times.count == 3 && times[0] <= times[1] && times[1] <= times[2])
        try await server.shutdown()
    }

    @Test func redirects() async throws {
        let server = try await TestHTTPServer.start()
        let chain = try await curl(["-L", server.baseURL + "/redirect/3?to=/bytes/10%3Fseed%3D8"])
        #expect(chain.heads.count == 4)
        #expect(chain.status == 200)
        #expect(chain.body == TestContent.bytes(count: 10, seed: 8))
        let temporary = try await curl(["-L", "-X", "PUT", "-d", "x", server.baseURL + "/redirect/2?code=307&to=/upload/r"])
        #expect(temporary.heads.map { $0.first ?? "" }.filter { $0.contains(" 307 ") }.count == 2)
        #expect(temporary.status == 200)
        #expect(server.requests.last?.method == "PUT" && server.requests.last?.path == "/upload/r")
        let loop = try await curl(["-L", "--max-redirs", "5", server.baseURL + "/redirect-loop"])
        #expect(loop.exitCode == 47)  // too many redirects
        let absolute = try await curl([server.baseURL + "/redirect-absolute?to=http://127.0.0.1:1/x"])
        #expect(absolute.status == 302)
        #expect(absolute.header("location") == "http://127.0.0.1:1/x")
        try await server.shutdown()
    }

    @Test func countsConcurrentConnections() async throws {
        let server = try await TestHTTPServer.start()
        try await withThrowingTaskGroup(of: CurlResult.self) { group in
            for _ in 0..<4 { group.addTask { try await curl([server.baseURL + "/delay/700"]) } }
            for try await r in group { #expect(r.status == 200) }
        }
        #expect(server.maxConcurrentConnections == 4)
        #expect(server.totalConnections == 4)
        server.resetStatistics()
        #expect(server.requests.isEmpty && server.totalConnections == 0)
        let slow = try await curl([server.baseURL + "/slow-headers/100"])
        #expect(String(decoding: slow.body, as: UTF8.self) == "ok")
        try await server.shutdown()
    }

    @Test("/gate/<name>?count=N holds its requests until the Nth arrives, then answers them all")
    func gateReleasesTogether() async throws {
        let server = try await TestHTTPServer.start()
        let first = Task { try await curl([server.baseURL + "/gate/g?count=3"]) }
        let second = Task { try await curl([server.baseURL + "/gate/g?count=3"]) }
        try await poll(until: "two requests waiting at the gate", timeout: .seconds(10), observed: "requests: \(server.requests.count)") {
            server.requests.count == 2
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.maxConcurrentConnections == 2, "both still wait, unanswered")
        let third = try await curl([server.baseURL + "/gate/g?count=3"])
        for result in [third, try await first.value, try await second.value] {
            #expect(result.status == 200 && String(decoding: result.body, as: UTF8.self) == "ok")
        }
        // The gate opened once; the next one starts empty.
        let fresh = try await curl([server.baseURL + "/gate/g?count=1"])
        #expect(fresh.status == 200)
        try await server.shutdown()
    }

    @Test func uploadsStreamAndCanBeCut() async throws {
        let server = try await TestHTTPServer.start()
        let bytes = TestContent.bytes(count: 1_500_000, seed: 11)
        let file = try tempFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let put = try await curl(["-T", file, "-H", "Content-Type: image/png", server.baseURL + "/upload/a.png"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(put.body)) as? [String: Any])
        #expect(json["bytes"] as? Int == bytes.count)
        #expect(json["sha256"] as? String == TestContent.sha256Hex(count: bytes.count, seed: 11))
        #expect(json["method"] as? String == "PUT")
        #expect(json["contentType"] as? String == "image/png")
        #expect(server.requests.last?.bodySHA256 == TestContent.sha256Hex(count: bytes.count, seed: 11))
        let post = try await curl(["--data-binary", "@" + file, server.baseURL + "/upload?status=201"])
        #expect(post.status == 201)
        let cut = try await curl(["-T", file, "-H", "Expect:", server.baseURL + "/upload/b?dropAfter=100000"])
        #expect(cut.exitCode != 0)
        #expect(server.requests.last?.bodyLength == 100_000)
        let once = server.baseURL + "/upload/c?dropAfter=1000&dropOnce=c"
        let cutOnce = try await curl(["-T", file, "-H", "Expect:", once])
        #expect(cutOnce.exitCode != 0)
        let again = try await curl(["-T", file, "-H", "Expect:", once])
        #expect(again.status == 200)
        #expect(server.requests.last?.bodyLength == bytes.count)
        try await server.shutdown()
    }

    @Test func headersAndBrokenResponses() async throws {
        let server = try await TestHTTPServer.start()
        let h = try await curl(["-H", "Authorization: Bearer t0k", "-H", "Accept: application/json", server.baseURL + "/headers"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(h.body)) as? [String: String])
        #expect(json["authorization"] == "Bearer t0k")
        #expect(json["accept"] == "application/json")
        let closed = try await curl([server.baseURL + "/close-immediately"])
        #expect(closed.exitCode == 52)  // empty reply
        let garbage = try await curl([server.baseURL + "/garbage"])
        #expect(garbage.exitCode != 0)
        let head = try await curl(["-I", server.baseURL + "/bytes/12345"])
        #expect(head.header("content-length") == "12345")
        #expect(String(decoding: head.body, as: UTF8.self).hasSuffix("content-length: 12345\r\n\r\n"))  // -I writes the head
        try await server.shutdown()
    }
}
