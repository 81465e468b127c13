// `ferry get` against the project's test server: content by SHA-256, resume, Ctrl-C, --many.
import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct GetTests {
    @Test func downloadMatchesSHA256AndJSONParses() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let count = 3_000_000
        let expected = TestContent.sha256Hex(count: count, seed: 7)
        let url = "\(server.baseURL)/bytes/\(count)?seed=7"

        let run = try await FerryBinary.run(["get", url, "-o", scratch.path("a.bin"), "--json", "--sha256", expected], in: scratch.url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try sha256Hex(ofFile: scratch.path("a.bin")) == expected)
        let json = try #require(run.json, "stdout: \(run.stdout)")
        #expect(json["status"] as? Int == 200)
        #expect(json["bytes"] as? Int == count)
        #expect(json["sha256"] as? String == expected)
        #expect(json["file"] as? String == scratch.path("a.bin"))
        #expect(json["seconds"] is Double)
        #expect(json["resumedFrom"] == nil)
        // The JSON names the URL without its query.
        #expect(!(json["url"] as? String ?? "").contains("seed=7"))

        // Default file name: the URL's last path component, in the working directory.
        let plain = try await FerryBinary.run(["get", "\(server.baseURL)/bytes/1000?seed=1", "--quiet"], in: scratch.url)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(try sha256Hex(ofFile: scratch.path("1000")) == TestContent.sha256Hex(count: 1000, seed: 1))
        #expect(plain.stderr.isEmpty)
        try await server.shutdown()
    }

    @Test func aRetryIsSaidOnceAndLogLinesOnlyWithFERRY_LOG() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let flaky = "\(server.baseURL)/flaky/log?failures=1&status=503&retryAfter=0&then=/bytes/100"
        let run = try await FerryBinary.run(["get", flaky, "-o", scratch.path("a.bin"), "--retries", "2", "--json"], in: scratch.url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.json?["status"] as? Int == 200, "stdout holds only the JSON: \(run.stdout)")
        #expect(run.stderr.contains("retrying"), "\(run.stderr)")
        #expect(!run.stderr.contains(" info "), "no library log lines by default: \(run.stderr)")

        let flaky2 = "\(server.baseURL)/flaky/log2?failures=1&status=503&retryAfter=0&then=/bytes/100"
        let verbose = try await FerryBinary.run(
            ["get", flaky2, "-o", scratch.path("b.bin"), "--retries", "2", "--json"], in: scratch.url, environment: ["FERRY_LOG": "info"])
        #expect(verbose.status == 0, "\(verbose.stderr)")
        #expect(verbose.json?["status"] as? Int == 200, "\(verbose.stdout)")
        #expect(verbose.stderr.contains(" info ferry.engine"), "\(verbose.stderr)")
        try await server.shutdown()
    }

    @Test func wrongSHA256FailsWithExit65() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let wrong = String(repeating: "ab", count: 32)
        let run = try await FerryBinary.run(["get", "\(server.baseURL)/bytes/5000?seed=2", "-o", scratch.path("b.bin"), "--sha256", wrong, "--json"], in: scratch.url)
        #expect(run.status == 65)
        let error = try #require(run.json?["error"] as? [String: Any], "stdout: \(run.stdout)")
        #expect(error["code"] as? String == "integrityCheckFailed")
        #expect((fileSize(scratch.path("b.bin")) ?? 0) == 0)
        try await server.shutdown()
    }

    @Test func continueAfterACutAsksForTheRest() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let count = 2_000_000
        let cut = 700_000
        let url = "\(server.baseURL)/bytes/\(count)?seed=3&dropAfter=\(cut)"
        let file = scratch.path("c.bin")

        let first = try await FerryBinary.run(["get", url, "-o", file], in: scratch.url)
        #expect(first.status == 18, "\(first.stderr)")
        #expect(first.stderr.contains("--continue"))
        // What reached the file: AsyncHTTPClient drops body parts it had buffered but not yet
        // handed over when the connection closes, so this can be a little under `cut`.
        let kept = Int(try #require(fileSize(file)))
        #expect(kept > 0 && kept <= cut)
        let record = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file + ".ferry-resume"))) as? [String: Any])
        #expect(record["bytes"] as? Int == kept)
        #expect(record["url"] as? String == url)
        #expect(record["validator"] as? String == "\"\(count)-3-0\"")

        let second = try await FerryBinary.run(["get", url, "-o", file, "--continue", "--json"], in: scratch.url)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: count, seed: 3))
        #expect(second.json?["resumedFrom"] as? Int == kept)
        let resumed = try #require(server.requests.last)
        #expect(resumed.header("range") == "bytes=\(kept)-")
        #expect(resumed.header("if-range") == "\"\(count)-3-0\"")
        #expect(!FileManager.default.fileExists(atPath: file + ".ferry-resume"))
        try await server.shutdown()
    }

    @Test func continueAfterTheResourceChangedStartsOver() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let count = 1_000_000
        let url = "\(server.baseURL)/bytes/\(count)?seed=4&dropAfter=300000"
        let file = scratch.path("d.bin")
        let first = try await FerryBinary.run(["get", url, "-o", file, "--quiet"], in: scratch.url)
        #expect(first.status == 18)
        // The server's representation is now another one: the recorded validator is stale.
        let sidecar = URL(fileURLWithPath: file + ".ferry-resume")
        var record = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: sidecar)) as? [String: Any])
        record["validator"] = "\"an-older-version\""
        try JSONSerialization.data(withJSONObject: record).write(to: sidecar)

        let second = try await FerryBinary.run(["get", url, "-o", file, "--continue", "--json"], in: scratch.url)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: count, seed: 4))
        #expect(second.json?["resumedFrom"] == nil)
        #expect(server.requests.last?.header("if-range") == "\"an-older-version\"")
        try await server.shutdown()
    }

    @Test func ctrlCLeavesWhatContinueNeeds() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let count = 4_000_000
        let url = "\(server.baseURL)/bytes/\(count)?seed=5&drip=2000000"
        let file = scratch.path("e.bin")
        let started = try FerryBinary.start(["get", url, "-o", file], in: scratch.url)
        // The first bytes (at most 30 s), then Ctrl-C.
        try await FerryBinary.killed(started) {
            try await poll(until: "ferry get to write its first 100,000 bytes", timeout: .seconds(30), observed: "\(fileSize(file) ?? 0) bytes in \(file)") {
                (fileSize(file) ?? 0) >= 100_000
            }
        }
        kill(started.0.processIdentifier, SIGINT)
        let first = try await FerryBinary.wait(started, timeout: 20)
        #expect(first.status == 130, "\(first.stderr)")
        let kept = try #require(fileSize(file))
        #expect(kept > 0 && kept < Int64(count))
        #expect(FileManager.default.fileExists(atPath: file + ".ferry-resume"))

        let second = try await FerryBinary.run(["get", url, "-o", file, "-C", "--json"], in: scratch.url)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: count, seed: 5))
        #expect((second.json?["resumedFrom"] as? Int).map(Int64.init) == kept)
        #expect(server.requests.last?.header("range") == "bytes=\(kept)-")
        try await server.shutdown()
    }

    @Test func manyDownloadsRespectTheConnectionLimit() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let sizes = (0..<40).map { 16_384 + $0 }
        let list = sizes.map { "\(server.baseURL)/bytes/\($0)?seed=\($0)&drip=400000" }.joined(separator: "\n")
        try list.write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        let run = try await FerryBinary.run(
            ["get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--connections", "3", "--json"], in: scratch.url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.json?["files"] as? Int == sizes.count)
        for size in sizes {
            #expect(try sha256Hex(ofFile: scratch.path("out/\(size)")) == TestContent.sha256Hex(count: size, seed: UInt64(size)))
        }
        #expect(server.maxConcurrentConnections <= 3)
        #expect(server.maxConcurrentConnections >= 2)
        try await server.shutdown()
    }

    /// The batch does the plain 200s; a redirect and a 404 go through a session, which
    /// follows the one and reports the other, as `ferry get URL` would.
    @Test func manyDownloadsHandRedirectsAndErrorsToASession() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let list = [
            "\(server.baseURL)/bytes/3000?seed=1",
            "\(server.baseURL)/redirect/1?to=/bytes/700%3Fseed%3D2",
            "\(server.baseURL)/status/404",
        ].joined(separator: "\n")
        try list.write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        let run = try await FerryBinary.run(["get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--json"], in: scratch.url)
        #expect(run.status == 22, "\(run.stderr)")
        #expect(run.json?["files"] as? Int == 2)
        #expect(run.json?["failed"] as? Int == 1)
        #expect(run.stderr.contains("404"), "\(run.stderr)")
        let failed = try #require((run.json?["failures"] as? [[String: Any]])?.first)
        #expect(failed["line"] as? Int == 3 && failed["code"] as? String == "httpError" && failed["status"] as? Int == 404, "\(failed)")
        #expect(try sha256Hex(ofFile: scratch.path("out/3000")) == TestContent.sha256Hex(count: 3000, seed: 1))
        #expect(try sha256Hex(ofFile: scratch.path("out/1")) == TestContent.sha256Hex(count: 700, seed: 2))
        #expect(!FileManager.default.fileExists(atPath: scratch.path("out/404")))
        try await server.shutdown()
    }

    /// Bodies are written into unnamed files and named only when whole: a `ferry` killed
    /// in the middle of a body leaves nothing in the folder, not even a temporary file.
    @Test func aKilledManyDownloadLeavesNoPartialFile() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        try "\(server.baseURL)/bytes/100000?stallAfter=20000&stallSeconds=30\n".write(
            toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: scratch.path("out"), withIntermediateDirectories: true)
        let started = try FerryBinary.start(["get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--quiet"], in: scratch.url)
        try await requestsArrive(at: server, "/bytes/100000", from: started)
        try await Task.sleep(for: .milliseconds(300))  // the first 20,000 bytes are written by now
        kill(started.0.processIdentifier, SIGKILL)
        let run = try await FerryBinary.wait(started, timeout: 10)
        #expect(run.status == SIGKILL)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path("out")).isEmpty)
        try await server.shutdown()
    }

    /// A file that cannot be written (a file-size limit, as a full disk) fails that download
    /// with exit 23 and a clear message; the others are saved whole and nothing partial stays.
    @Test func aWriteThatFailsLosesOnlyThatFile() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let list = ["/bytes/16000?seed=1", "/bytes/200000?seed=2", "/bytes/20000?seed=3"].map { server.baseURL + $0 }
        try list.joined(separator: "\n").write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        let binary = try BuiltProducts.path(of: "ferry")
        // dash counts `ulimit -f` in 512-byte blocks: 32 KiB per file.
        let started = try FerryBinary.start(
            ["-c", "ulimit -f 64; exec \"$0\" \"$@\"", binary, "get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--json"],
            in: scratch.url, executable: "/bin/sh")
        let run = try await FerryBinary.wait(started, timeout: 30)
        #expect(run.status == 23, "\(run.stderr)")
        #expect(run.json?["files"] as? Int == 2)
        #expect(run.json?["failed"] as? Int == 1)
        #expect(run.stderr.contains("cannot write") && run.stderr.contains("200000") && run.stderr.contains("File too large"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path("out")).sorted() == ["16000", "20000"])
        #expect(try sha256Hex(ofFile: scratch.path("out/16000")) == TestContent.sha256Hex(count: 16000, seed: 1))
        #expect(try sha256Hex(ofFile: scratch.path("out/20000")) == TestContent.sha256Hex(count: 20000, seed: 3))
        try await server.shutdown()
    }

    /// A second run with --skip-existing fetches only what the first did not save, and
    /// leaves the files already there untouched.
    @Test func skipExistingContinuesAStoppedList() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let sizes = [1000, 2000, 3000, 4000]
        try sizes.map { "\(server.baseURL)/bytes/\($0)?seed=4" }.joined(separator: "\n")
            .write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: scratch.path("out"), withIntermediateDirectories: true)
        try Data("kept as it is".utf8).write(to: URL(fileURLWithPath: scratch.path("out/2000")))
        let run = try await FerryBinary.run(
            ["get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--skip-existing", "--json"], in: scratch.url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.json?["files"] as? Int == 3)
        #expect(run.json?["skipped"] as? Int == 1)
        #expect(try String(contentsOfFile: scratch.path("out/2000"), encoding: .utf8) == "kept as it is")
        #expect(try sha256Hex(ofFile: scratch.path("out/3000")) == TestContent.sha256Hex(count: 3000, seed: 4))
        #expect(server.requests.count == 3, "nothing asked for the file already there")
        try await server.shutdown()
    }

    /// A name decoded from the URL never leaves the folder: `%2F` in the last segment is
    /// saved as `_`, with `get URL` and with `--many`.
    @Test func anEncodedSlashInTheNameStaysInTheFolder() async throws {
        let nginx = try await NginxServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: nginx.root.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data(TestContent.bytes(count: 5000, seed: 8)).write(to: nginx.root.appendingPathComponent("sub/name.bin"))
        let url = nginx.baseURL + "/sub%2Fname.bin"  // nginx decodes it to /sub/name.bin
        try url.write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: scratch.path("out/sub"), withIntermediateDirectories: true)

        let many = try await FerryBinary.run(["get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--quiet"], in: scratch.url)
        #expect(many.status == 0, "\(many.stderr)")
        #expect(try sha256Hex(ofFile: scratch.path("out/sub_name.bin")) == TestContent.sha256Hex(count: 5000, seed: 8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path("out/sub")).isEmpty)

        let single = try await FerryBinary.run(["get", url, "--quiet"], in: scratch.url)
        #expect(single.status == 0, "\(single.stderr)")
        #expect(FileManager.default.fileExists(atPath: scratch.path("sub_name.bin")))
        #expect(!FileManager.default.fileExists(atPath: scratch.path("sub/name.bin")))
        try await nginx.stop()
    }

    /// A list is checked before anything is fetched: a bad URL and two URLs that would be saved
    /// under one name are named by their line (blank and comment lines counted).
    @Test func aListIsCheckedLineByLine() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try "http://127.0.0.1:9/a/f\n\n# comment\nftp://x/y\n".write(toFile: scratch.path("bad.txt"), atomically: true, encoding: .utf8)
        let bad = try await FerryBinary.run(["get", "--many", scratch.path("bad.txt"), "--dir", scratch.path("out")], in: scratch.url)
        #expect(bad.status == 2, "\(bad.stderr)")
        #expect(bad.stderr.contains("bad.txt:4:"), "\(bad.stderr)")
        try "http://127.0.0.1:9/a/f\n\nhttp://127.0.0.1:9/b/f\n".write(toFile: scratch.path("same.txt"), atomically: true, encoding: .utf8)
        let same = try await FerryBinary.run(["get", "--many", scratch.path("same.txt"), "--dir", scratch.path("out")], in: scratch.url)
        #expect(same.status == 2, "\(same.stderr)")
        #expect(same.stderr.contains("same.txt:1 and") && same.stderr.contains("same.txt:3 would both be saved as f"), "\(same.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("out")), "nothing was fetched or created")

        let server = try await TestHTTPServer.start()
        try "\(server.baseURL)/bytes/10\n\(server.baseURL)/bytes/10\n".write(toFile: scratch.path("twice.txt"), atomically: true, encoding: .utf8)
        let twice = try await FerryBinary.run(["get", "--many", scratch.path("twice.txt"), "--dir", scratch.path("out"), "--json"], in: scratch.url)
        #expect(twice.status == 0 && twice.json?["files"] as? Int == 1, "the same URL twice is fetched once: \(twice.stderr)")
        #expect(server.requests.count == 1)
        try await server.shutdown()
    }

    /// `--many -` reads the list from standard input, as in `find … | ferry get --many -`.
    @Test func aListFromStandardInput() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let binary = try BuiltProducts.path(of: "ferry")
        let lines = "\(server.baseURL)/bytes/100?seed=1\\n\(server.baseURL)/bytes/200?seed=2\\n"
        let started = try FerryBinary.start(
            ["-c", "printf '\(lines)' | exec \"$0\" get --many - --dir out --json", binary], in: scratch.url, executable: "/bin/sh")
        let run = try await FerryBinary.wait(started, timeout: 30)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.json?["files"] as? Int == 2)
        #expect(try sha256Hex(ofFile: scratch.path("out/200")) == TestContent.sha256Hex(count: 200, seed: 2))
        try await server.shutdown()
    }

    /// A URL that goes through the session (here: a redirect) writes into `.ferry-partial-<pid>`
    /// until whole; killed mid-body, that folder is all that is left, and the next run removes it.
    @Test func aKilledSessionDownloadIsClearedByTheNextRun() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let stalled = "\(server.baseURL)/redirect/1?to=/bytes/100000%3FstallAfter%3D20000%26stallSeconds%3D30"
        try stalled.write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        let started = try FerryBinary.start(["get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--quiet"], in: scratch.url)
        try await requestsArrive(at: server, "/bytes/100000", from: started)  // the redirected request
        try await Task.sleep(for: .milliseconds(300))
        kill(started.0.processIdentifier, SIGKILL)
        _ = try await FerryBinary.wait(started, timeout: 10)
        let left = try FileManager.default.contentsOfDirectory(atPath: scratch.path("out"))
        #expect(left == [".ferry-partial-\(started.0.processIdentifier)"], "\(left)")

        try "\(server.baseURL)/bytes/10\n".write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        let next = try await FerryBinary.run(["get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--quiet"], in: scratch.url)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path("out")) == ["10"])
        try await server.shutdown()
    }

    /// Ctrl-C stops a list cleanly: exit 130, a line saying how many files were saved, whole
    /// files only (no partial, no .ferry-partial folder), within a second of the signal.
    @Test func ctrlCStopsAListCleanly() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let list = [
            "\(server.baseURL)/bytes/3000?seed=1",
            "\(server.baseURL)/bytes/100000?stallAfter=20000&stallSeconds=30",
            "\(server.baseURL)/redirect/1?to=/bytes/100000%3FstallAfter%3D20000%26stallSeconds%3D30",
        ].joined(separator: "\n")
        try list.write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        let started = try FerryBinary.start(["get", "--many", scratch.path("list.txt"), "--dir", scratch.path("out"), "--quiet"], in: scratch.url)
        try await requestsArrive(at: server, "/bytes/100000", count: 2, from: started)  // both stalled downloads are under way
        try await Task.sleep(for: .milliseconds(200))
        let signalled = ContinuousClock.now
        kill(started.0.processIdentifier, SIGINT)
        let run = try await FerryBinary.wait(started, timeout: 10)
        // Far below the 30 s the server stalls (a parallel run on two cores can stall for seconds).
        #expect(ContinuousClock.now - signalled < .seconds(10))
        #expect(run.status == 130, "\(run.stderr)")
        #expect(run.stderr.contains("interrupted with 1 of 3 files saved"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path("out")) == ["3000"])
        try await server.shutdown()
    }

    /// Waits (at most 30 s) until `count` requests for paths starting with `prefix` reached the
    /// server; when they do not, the `ferry` that should send them is killed and the wait fails.
    private func requestsArrive(at server: TestHTTPServer, _ prefix: String, count: Int = 1, from started: (Process, URL, URL)) async throws {
        try await FerryBinary.killed(started) {
            try await poll(until: "\(count) request(s) for \(prefix)… at the server", timeout: .seconds(30), observed: "requests: \(server.requests.map(\.uri))") {
                server.requests.filter { $0.uri.hasPrefix(prefix) }.count >= count
            }
        }
    }
}
