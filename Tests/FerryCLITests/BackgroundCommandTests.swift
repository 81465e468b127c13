import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ferry upload|download|list|explain|pause|resume|cancel|daemon`, run as a user runs them:
/// the real `ferry` binary, which starts the real `ferryd` beside it on first use, each test
/// with folders of its own.
@Suite("ferry with ferryd", .serialized, .timeLimit(.minutes(2)))
struct BackgroundCommandTests {
    /// Runs `ferry` with this test's Ferry folders.
    struct Ferry {
        let scratch: Scratch
        var environment: [String: String] {
            ["FERRY_DATA_DIR": scratch.path("data"), "FERRY_RUNTIME_DIR": scratch.path("run")]
        }

        func run(_ args: [String], timeout: Double = 30) async throws -> FerryRun {
            try await FerryBinary.run(args, in: scratch.url, timeout: timeout, environment: environment)
        }

        /// The tasks of `ferry.cli`, from `ferry list --json`.
        func tasks() async throws -> [[String: Any]] {
            let listing = try await run(["list", "--json"])
            let sessions = (try? JSONSerialization.jsonObject(with: Data(listing.stdout.utf8))) as? [[String: Any]] ?? []
            return sessions.first { ($0["session"] as? [String: Any])?["sessionIdentifier"] as? String == "ferry.cli" }?["tasks"] as? [[String: Any]] ?? []
        }

        /// Polls `ferry list` (at most 20 s) until task `id` is in `state`; the task.
        @discardableResult
        func waitFor(task id: Int, state: String) async throws -> [String: Any] {
            var seen: [String: Any]?
            return try await eventually("task \(id) to be \(state) in `ferry list`", timeout: .seconds(20), every: .milliseconds(100),
                                        observed: seen.map { "\($0)" } ?? "no task \(id) listed") {
                seen = try await tasks().first { $0["taskIdentifier"] as? Int == id }
                return seen?["state"] as? String == state ? seen : nil
            }
        }

        func stopDaemon() async { _ = try? await run(["daemon", "stop"]) }
    }

    func withFerry(_ body: (Ferry, TestHTTPServer) async throws -> Void) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let ferry = Ferry(scratch: scratch)
        let server = try await TestHTTPServer.start()
        do {
            try await body(ferry, server)
        } catch {
            await ferry.stopDaemon()
            try? await server.shutdown()
            throw error
        }
        await ferry.stopDaemon()
        try await server.shutdown()
    }

    @Test("daemon stop gets ferryd's answer every time: 'ferryd stopped', exit 0 (eight rounds of start and stop)")
    func stopIsAnswered() async throws {
        try await withFerry { ferry, server in
            for round in 1...8 {
                // Any command that needs ferryd starts it; then it is stopped again.
                let upload = try await ferry.run(["download", server.baseURL + "/bytes/10"])
                #expect(upload.status == 0, "round \(round): \(upload.stderr)")
                let stop = try await ferry.run(["daemon", "stop"])
                #expect(stop.status == 0 && stop.stdout.contains("ferryd stopped"), "round \(round): \(stop.stdout) \(stop.stderr)")
            }
        }
    }

    @Test("daemon status says ferryd is not running (exit 7) and does not start it")
    func statusWithoutDaemon() async throws {
        try await withFerry { ferry, _ in
            let status = try await ferry.run(["daemon", "status"])
            #expect(status.status == 7)
            #expect(status.stderr.contains("ferryd is not running"))
            #expect(!FileManager.default.fileExists(atPath: ferry.scratch.path("run/ferryd.sock")))
        }
    }

    @Test("after ferryd is killed, the next `ferry list` starts it again and the queued download completes")
    func listRestartsAKilledDaemon() async throws {
        try await withFerry { ferry, server in
            let submitted = try await ferry.run(["download", server.baseURL + "/bytes/400000?seed=3&drip=200000"])
            #expect(submitted.status == 0, "\(submitted.stderr)")
            let id = try #require(Int(submitted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            try await ferry.waitFor(task: id, state: "running")
            let before = try #require(try await ferry.run(["daemon", "status", "--json"]).json?["pid"] as? Int)
            kill(pid_t(before), SIGKILL)
            try await poll(until: "ferryd (pid \(before)) to be gone after SIGKILL", timeout: .seconds(10)) {
                kill(pid_t(before), 0) != 0
            }
            // No client started it meanwhile; `ferry list` (inside waitFor) does.
            let task = try await ferry.waitFor(task: id, state: "completed")
            #expect(task["bytesReceived"] as? Int == 400_000)
            let after = try #require(try await ferry.run(["daemon", "status", "--json"]).json?["pid"] as? Int)
            #expect(after != before)
        }
    }

    @Test("upload returns at once with the task id; ferryd starts on demand and completes it; list and status show it")
    func uploadThenList() async throws {
        try await withFerry { ferry, server in
            let file = ferry.scratch.path("photo.bin")
            let content = Data(TestContent.bytes(count: 2 << 20, seed: 4))
            try content.write(to: URL(fileURLWithPath: file))
            let upload = try await ferry.run(["upload", file, server.baseURL + "/upload/photo?token=s3cret", "-X", "POST"])
            #expect(upload.status == 0)
            let id = try #require(Int(upload.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(!upload.stderr.contains("s3cret"))
            let task = try await ferry.waitFor(task: id, state: "completed")
            #expect(task["bytesSent"] as? Int == content.count)
            #expect(server.requests.last { $0.path.hasPrefix("/upload/photo") }?.bodySHA256 == TestFiles.sha256Hex(content))
            let status = try await ferry.run(["daemon", "status", "--json"])
            #expect(status.status == 0)
            #expect(status.json?["pid"] as? Int != nil)
            let human = try await ferry.run(["list"])
            #expect(human.stdout.contains("#\(id)  upload  completed"))
            #expect(!human.stdout.contains("s3cret"))
        }
    }

    @Test("daemon status --json and daemon metrics count what ferryd did: tasks by state, attempts, retries, bytes moved, connections, memory")
    func statusAndMetricsCount() async throws {
        try await withFerry { ferry, server in
            // The first connection is dropped after 100,000 bytes: one retry, resumed with a Range.
            let size = 300_000
            let run = try await ferry.run(["download", server.baseURL + "/bytes/\(size)?seed=5&dropAfter=100000", "--wait", "-o", "d.bin"])
            #expect(run.status == 0, "\(run.stderr)")
            let status = try #require(try await ferry.run(["daemon", "status", "--json"]).json)
            let activity = try #require(status["activity"] as? [String: Any])
            #expect(activity["attempts"] as? Int == 2)
            #expect(activity["retries"] as? Int == 1)
            #expect(activity["completedTasks"] as? Int == 1)
            #expect(activity["bytesReceived"] as? Int == size, "a resumed download counts each byte once: \(activity)")
            #expect(status["completedTaskCount"] as? Int == 1)
            #expect((status["residentMemoryBytes"] as? Int ?? 0) > 1 << 20)

            let metrics = try await ferry.run(["daemon", "metrics"])
            #expect(metrics.status == 0, "\(metrics.stderr)")
            let lines = Set(metrics.stdout.split(separator: "\n").map(String.init))
            for expected in [
                // Gauges are written as floating point by the exporter, counters as integers.
                "ferryd_tasks{state=\"completed\"} 1.0", "ferryd_tasks{state=\"waiting\"} 0.0", "ferryd_attempts_total 2", "ferryd_retries_total 1",
                "ferryd_tasks_finished_total{outcome=\"completed\"} 1", "ferryd_bytes_received_total \(size)", "# TYPE ferryd_bytes_received_total counter",
                "ferryd_connections 1.0", "ferryd_events_waiting 0.0",
            ] {
                #expect(lines.contains(expected), "no line \(expected) in:\n\(metrics.stdout)")
            }
            #expect(lines.contains { $0.hasPrefix("ferryd_resident_memory_bytes ") })
        }
    }

    @Test("download --wait shows progress and moves the finished file to -o, byte-exact")
    func downloadWait() async throws {
        try await withFerry { ferry, server in
            let size = 3 << 20
            let run = try await ferry.run(["download", server.baseURL + "/bytes/\(size)?seed=8", "--wait", "-o", "out.bin"])
            #expect(run.status == 0)
            #expect(try sha256Hex(ofFile: ferry.scratch.path("out.bin")) == TestContent.sha256Hex(count: size, seed: 8))
        }
    }

    @Test("download --wait without -o names the file from the URL, never a path: %2F becomes _")
    func downloadWaitDefaultNameStaysHere() async throws {
        try await withFerry { ferry, _ in
            let nginx = try await NginxServer.start()
            do {
                try FileManager.default.createDirectory(at: nginx.root.appendingPathComponent("sub"), withIntermediateDirectories: true)
                try Data(TestContent.bytes(count: 4000, seed: 9)).write(to: nginx.root.appendingPathComponent("sub/name.bin"))
                try FileManager.default.createDirectory(atPath: ferry.scratch.path("sub"), withIntermediateDirectories: true)
                let run = try await ferry.run(["download", nginx.baseURL + "/sub%2Fname.bin", "--wait"])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(try sha256Hex(ofFile: ferry.scratch.path("sub_name.bin")) == TestContent.sha256Hex(count: 4000, seed: 9))
                #expect(try FileManager.default.contentsOfDirectory(atPath: ferry.scratch.path("sub")).isEmpty)
                try await nginx.stop()
            } catch {
                try? await nginx.stop()
                throw error
            }
        }
    }

    @Test("download --wait of a 404 exits 22 and leaves no file; ferry list shows it failed with its status")
    func downloadWaitHTTPError() async throws {
        try await withFerry { ferry, server in
            let run = try await ferry.run(["download", server.baseURL + "/status/404", "--wait", "-o", "missing.bin"])
            #expect(run.status == 22)
            #expect(!FileManager.default.fileExists(atPath: ferry.scratch.path("missing.bin")))
            // ferry list shows the answer for what it is; --json has the status.
            let human = try await ferry.run(["list"])
            #expect(human.stdout.contains("#1  download  failed (HTTP 404)"), "\(human.stdout)")
            let task = try #require(try await ferry.tasks().first)
            #expect(task["responseStatus"] as? Int == 404)
            #expect(task["state"] as? String == "completed", "ferryd's state is the platform's: a completed task with a response")
        }
    }

    @Test("upload --wait --json answered with an HTTP error prints one JSON document with the status and the error, and exits 22")
    func uploadWaitJSONHTTPError() async throws {
        try await withFerry { ferry, server in
            let file = ferry.scratch.path("note.txt")
            try Data("hello".utf8).write(to: URL(fileURLWithPath: file))
            let run = try await ferry.run(["upload", file, server.baseURL + "/status/500", "-X", "POST", "--wait", "--json"])
            #expect(run.status == 22, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n")
            #expect(lines.count == 1, "more than one document: \(run.stdout)")
            let document = try #require(run.json)
            #expect(document["state"] as? String == "failed")
            #expect(document["status"] as? Int == 500)
            let error = try #require(document["error"] as? [String: Any])
            #expect(error["code"] as? String == "httpError")
            #expect(error["exitCode"] as? Int == 22)
            #expect(run.stderr.contains("HTTP 500"))
        }
    }

    @Test("explain says a task waits for its begin date and when it tries; pause, resume and cancel change it")
    func explainAndControl() async throws {
        try await withFerry { ferry, server in
            let submitted = try await ferry.run(["download", server.baseURL + "/bytes/1000?seed=1", "--after", "3600"])
            let id = try #require(Int(submitted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            let explained = try await ferry.run(["explain", "\(id)"])
            #expect(explained.status == 0)
            #expect(explained.stdout.lowercased().contains("begin"))
            #expect(explained.stdout.contains("next try in"))
            let paused = try await ferry.run(["pause", "\(id)", "--json"])
            #expect(paused.json?["state"] as? String == "suspended")
            let resumed = try await ferry.run(["resume", "\(id)", "--json"])
            #expect(resumed.json?["state"] as? String == "waiting")
            let cancelled = try await ferry.run(["cancel", "\(id)", "--json"])
            #expect(cancelled.json?["state"] as? String == "cancelled")
            #expect(server.requests.filter { $0.path.hasPrefix("/bytes/1000") }.isEmpty)
        }
    }

    @Test("while download --wait owns the CLI's session, pause and resume from another shell work at once, and the wait still ends with the whole file")
    func controlFromAnotherShell() async throws {
        try await withFerry { ferry, server in
            try await whileAWaitOwnsTheSession(ferry, server, seed: 3) {
                let started = ContinuousClock.now
                let paused = try await ferry.run(["pause", "1", "--json"])
                #expect(ContinuousClock.now - started < .seconds(3))
                #expect(paused.status == 0, "\(paused.stdout) \(paused.stderr)")
                #expect(paused.json?["state"] as? String == "suspended")
                let resumed = try await ferry.run(["resume", "1"])
                #expect(resumed.status == 0, "\(resumed.stderr)")
            }
        }
    }

    @Test("a task identifier that is not a number is a usage error; an unknown one is refused, naming it")
    func badTaskArguments() async throws {
        try await withFerry { ferry, server in
            #expect(try await ferry.run(["explain", "abc"]).status == 2)
            _ = try await ferry.run(["download", server.baseURL + "/bytes/10?seed=1", "--after", "3600"])  // starts ferryd
            let unknown = try await ferry.run(["pause", "9999"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("9999"))
        }
    }
}
