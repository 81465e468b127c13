import FerryCore
import FerryEngine
import FerryTestSupport
import Foundation
import Testing

@Suite("Downloads to files")
struct DownloadTests {
    @Test("a download's bytes match by SHA-256 and the last progress report carries the totals")
    func downloadMatches() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("out.bin")
        let size = 3 << 20
        try await withServerAndEngine { server, engine in
            let observer = RecordingObserver()
            let result = try await engine.run(
                Transfer(request: Request(url: url(server, "/bytes/\(size)?seed=7")), destination: .file(file, resume: nil)),
                observer: observer)
            #expect(result.response.statusCode == 200)
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: size, seed: 7))
            let last = try #require(observer.written.last)
            #expect(last.1 == Int64(size))
            #expect(last.2 == Int64(size))
            #expect(observer.written.reduce(0) { $0 + $1.0 } == Int64(size))
            // Coalesced: far fewer reports than 64 KiB reads.
            #expect(observer.written.count < size / 65_536)
        }
    }

    @Test("a cut download continues from the byte it reached with Range and If-Range")
    func resumeAfterCut() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("out.bin")
        let size = 2 << 20
        try await withServerAndEngine { server, engine in
            let target = url(server, "/bytes/\(size)?seed=3&dropAfter=700000")
            let failure = await expectFerryError(.networkConnectionLost) {
                try await engine.run(Transfer(request: Request(url: target), destination: .file(file, resume: nil)))
            }
            #expect(failure?.attemptOutcome(responseArrived: true, bodyDelivered: false) == .brokenAfterSending)
            let partial = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int64)
            #expect(partial > 0 && partial <= 700_000)
            // What the first response said is the validator; ask the server again for it.
            let head = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/\(size)?seed=3"), method: "HEAD")))
            let validator = try #require(head.response.etag)
            let observer = RecordingObserver()
            let result = try await engine.run(
                Transfer(request: Request(url: target), destination: .file(file, resume: ResumePoint(offset: partial, validator: validator))),
                observer: observer)
            #expect(result.response.statusCode == 206)
            #expect(observer.resumedAt == [partial])
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: size, seed: 3))
            let resumed = try #require(server.requests.last)
            #expect(resumed.header("Range") == "bytes=\(partial)-")
            #expect(resumed.header("If-Range") == validator)
        }
    }

    @Test("with a retry policy, a dropped download resumes by itself")
    func retryResumes() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("out.bin")
        let size = 1 << 20
        var policy = RetryPolicy.standard
        policy.initialDelay = .milliseconds(50)
        try await withServerAndEngine { server, engine in
            let result = try await engine.run(
                Transfer(request: Request(url: url(server, "/bytes/\(size)?seed=9&dropAfter=300000")), destination: .file(file, resume: nil), retry: policy))
            #expect(result.response.statusCode == 206)
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: size, seed: 9))
            let ranged = server.requests.filter { $0.header("Range") != nil }
            #expect(ranged.count == 1)
        }
    }

    @Test("when the resource changed, the download restarts and the file is the new version, not a splice")
    func changedResourceRestarts() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("out.bin")
        let size = 1 << 20
        try await withServerAndEngine { server, engine in
            let old = url(server, "/bytes/\(size)?seed=5&version=1&dropAfter=400000")
            await expectFerryError(.networkConnectionLost) {
                try await engine.run(Transfer(request: Request(url: old), destination: .file(file, resume: nil)))
            }
            let oldHead = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/\(size)?seed=5&version=1"), method: "HEAD")))
            let partial = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int64)
            let result = try await engine.run(
                Transfer(
                    request: Request(url: url(server, "/bytes/\(size)?seed=5&version=2")),
                    destination: .file(file, resume: ResumePoint(offset: partial, validator: try #require(oldHead.response.etag)))))
            #expect(result.response.statusCode == 200)
            let expected = TestContent.sha256Hex(count: size, seed: TestContent.seed(5, version: 2))
            #expect(try sha256Hex(ofFile: file) == expected)
        }
    }

    @Test("a server without validators cannot be resumed: the engine starts over")
    func noValidatorStartsOver() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("out.bin")
        try "stale bytes".write(to: file, atomically: true, encoding: .utf8)
        try await withServerAndEngine { server, engine in
            let result = try await engine.run(
                Transfer(request: Request(url: url(server, "/bytes/5000?seed=1&validators=none")), destination: .file(file, resume: nil)))
            #expect(result.validator == nil)
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: 5000, seed: 1))
        }
    }

    @Test("an expected SHA-256 that does not match fails the download")
    func expectedDigestMismatch() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("out.bin")
        try await withServerAndEngine { server, engine in
            var request = Request(url: url(server, "/bytes/10000?seed=2"))
            request.expectedSHA256 = String(repeating: "0", count: 64)
            await expectFerryError(.integrityCheckFailed) {
                try await engine.run(Transfer(request: request, destination: .file(file, resume: nil)))
            }
            request.expectedSHA256 = TestContent.sha256Hex(count: 10000, seed: 2)
            let ok = try await engine.run(Transfer(request: request, destination: .file(file, resume: nil)))
            #expect(ok.bytesReceived == 10000)
        }
    }

    @Test("Repr-Digest and Content-Digest from the server are checked")
    func serverDigests() async throws {
        try await withServerAndEngine { server, engine in
            let good = try await engine.run(Transfer(request: Request(url: url(server, "/bytes/70000?seed=4&digest=good"))))
            #expect(good.body?.count == 70000)
            #expect(good.response.headers["Repr-Digest"] != nil)
            let failure = await expectFerryError(.integrityCheckFailed) {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/70000?seed=4&digest=bad"))))
            }
            #expect(failure?.message.contains("Digest") == true)
        }
    }

    @Test("a Content-Length longer than the body is a lost connection, with the counts")
    func wrongContentLength() async throws {
        try await withServerAndEngine { server, engine in
            let failure = await expectFerryError(.networkConnectionLost) {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/1000?seed=1&lengthDelta=500"))))
            }
            #expect(failure?.message.contains("1000") == true || failure?.underlyingError != nil)
        }
    }

    @Test("an in-memory body over its limit fails clearly")
    func memoryLimit() async throws {
        try await withServerAndEngine { server, engine in
            await expectFerryError(.dataLengthExceedsMaximum) {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/200000?seed=1")), destination: .memory(limit: 100_000)))
            }
        }
    }
}
