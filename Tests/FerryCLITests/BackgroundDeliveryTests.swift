import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ferry download` without `--wait`: ferryd puts the file at `-o` (or the URL's name here)
/// itself, refuses a place it cannot write at once, and keeps no events nobody will read; a
/// second `ferry` works while a `--wait` owns the CLI's session.
extension BackgroundCommandTests {
    /// The task `id` of `ferry.cli` once `ferry list` shows it completed.
    func completed(_ id: Int, _ ferry: Ferry) async throws -> [String: Any] {
        try await ferry.waitFor(task: id, state: "completed")
    }

    static func taskID(_ run: FerryRun) throws -> Int {
        try #require(Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "no task id: \(run.stdout) \(run.stderr)")
    }

    /// A path as the file system names it (the scratch folder may be reached through a link).
    static func real(_ path: String) -> String { URL(fileURLWithPath: path).resolvingSymlinksInPath().path }

    @Test("download -o without --wait: ferryd puts the file at -o, byte-exact, and ferry list --json says where")
    func downloadDeliveredToOutput() async throws {
        try await withFerry { ferry, server in
            let size = 300_000
            try FileManager.default.createDirectory(atPath: ferry.scratch.path("out"), withIntermediateDirectories: true)
            let submitted = try await ferry.run(["download", server.baseURL + "/bytes/\(size)?seed=21", "-o", "out/file.bin", "--json"])
            #expect(submitted.status == 0, "\(submitted.stderr)")
            let target = ferry.scratch.path("out/file.bin")
            #expect(Self.real(submitted.json?["destination"] as? String ?? "") == Self.real(target))
            let id = try #require(submitted.json?["task"] as? Int)
            let task = try await completed(id, ferry)
            #expect(try sha256Hex(ofFile: target) == TestContent.sha256Hex(count: size, seed: 21))
            // A new file's mode, from the umask ferryd got from this process (read without changing it).
            let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            let mask = try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") }.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) })
            let mode = (try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? NSNumber)?.intValue
            #expect(mode == 0o666 & ~mask)
            #expect(Self.real(task["deliveredTo"] as? String ?? "") == Self.real(target))
            let human = try await ferry.run(["list"])
            #expect(human.stdout.contains("→ \(task["deliveredTo"] as? String ?? "?")"), "\(human.stdout)")
            // Nothing is left in ferryd's folders.
            let container = ferry.scratch.path("data/session-files/ferry.cli/downloads")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: container))?.isEmpty ?? true)
        }
    }

    @Test("download without -o lands here under the URL's name; a name already taken is never replaced: 'name (1)'")
    func downloadDefaultNameAndNoOverwrite() async throws {
        try await withFerry { ferry, server in
            let first = try await ferry.run(["download", server.baseURL + "/bytes/5000?seed=22"])
            #expect(first.status == 0, "\(first.stderr)")
            _ = try await completed(try Self.taskID(first), ferry)
            #expect(try sha256Hex(ofFile: ferry.scratch.path("5000")) == TestContent.sha256Hex(count: 5000, seed: 22))
            // The same name again: the first file stays, the second is "5000 (1)".
            let second = try await ferry.run(["download", server.baseURL + "/bytes/5000?seed=23"])
            let task = try await completed(try Self.taskID(second), ferry)
            #expect(try sha256Hex(ofFile: ferry.scratch.path("5000")) == TestContent.sha256Hex(count: 5000, seed: 22))
            #expect(try sha256Hex(ofFile: ferry.scratch.path("5000 (1)")) == TestContent.sha256Hex(count: 5000, seed: 23))
            #expect(Self.real(task["deliveredTo"] as? String ?? "") == Self.real(ferry.scratch.path("5000 (1)")))
            // --wait follows the same rule, and says where the file went.
            try Data("mine".utf8).write(to: URL(fileURLWithPath: ferry.scratch.path("w.txt")))
            let waited = try await ferry.run(["download", server.baseURL + "/bytes/700?seed=24", "--wait", "-o", "w.txt"])
            #expect(waited.status == 0, "\(waited.stderr)")
            #expect(try String(contentsOfFile: ferry.scratch.path("w.txt"), encoding: .utf8) == "mine")
            #expect(try sha256Hex(ofFile: ferry.scratch.path("w (1).txt")) == TestContent.sha256Hex(count: 700, seed: 24))
            #expect(waited.stderr.contains("w (1).txt"), "\(waited.stderr)")
        }
    }

    @Test("an -o in a missing folder or that is a folder is refused at submission: exit 23, a clear message, nothing queued")
    func unwritableOutputRefused() async throws {
        try await withFerry { ferry, server in
            let missing = try await ferry.run(["download", server.baseURL + "/bytes/10", "-o", "nowhere/x.bin"])
            #expect(missing.status == 23, "\(missing.stderr)")
            #expect(missing.stderr.contains("does not exist"), "\(missing.stderr)")
            let folder = try await ferry.run(["download", server.baseURL + "/bytes/10", "-o", ".", "--json"])
            #expect(folder.status == 23, "\(folder.stdout) \(folder.stderr)")
            let error = try #require(folder.json?["error"] as? [String: Any], "\(folder.stdout)")
            #expect(error["code"] as? String == "cannotWriteToFile")
            #expect((error["message"] as? String ?? "").contains("is a folder"), "\(error)")
            #expect(try await ferry.tasks().isEmpty)
            #expect(server.requests.filter { $0.path.hasPrefix("/bytes/10") }.isEmpty)
        }
    }

    @Test("a 404 download without --wait is a failed task and writes nothing at -o")
    func notFoundIsNotDelivered() async throws {
        try await withFerry { ferry, server in
            let submitted = try await ferry.run(["download", server.baseURL + "/status/404", "-o", "nf.bin"])
            #expect(submitted.status == 0, "\(submitted.stderr)")
            let task = try await completed(try Self.taskID(submitted), ferry)
            #expect(task["responseStatus"] as? Int == 404)
            #expect(task["deliveredTo"] == nil)
            #expect(!FileManager.default.fileExists(atPath: ferry.scratch.path("nf.bin")))
            let human = try await ferry.run(["list"])
            #expect(human.stdout.contains("failed (HTTP 404)"), "\(human.stdout)")
        }
    }

    @Test("downloads to another file system are copied there, byte-exact (here: /dev/shm)")
    func deliveredAcrossFileSystems() async throws {
        try await withFerry { ferry, server in
            var shm = stat()
            var scratch = stat()
            guard stat("/dev/shm", &shm) == 0, stat(ferry.scratch.url.path, &scratch) == 0, shm.st_dev != scratch.st_dev else {
                Issue.record("no second file system at /dev/shm to deliver to")
                return
            }
            let target = "/dev/shm/ferry-cli-test-\(UUID().uuidString).bin"
            defer { try? FileManager.default.removeItem(atPath: target) }
            let submitted = try await ferry.run(["download", server.baseURL + "/bytes/400000?seed=25", "-o", target])
            let task = try await completed(try Self.taskID(submitted), ferry)
            #expect(task["deliveredTo"] as? String == target)
            #expect(try sha256Hex(ofFile: target) == TestContent.sha256Hex(count: 400_000, seed: 25))
        }
    }

    /// Runs `body` while a `ferry download --wait` (task 1, a 200,000-byte download that
    /// stalls 3 s) owns `ferry.cli` from another process; then that wait must end with the
    /// whole file. The waiting process is killed if `body` throws.
    func whileAWaitOwnsTheSession(_ ferry: Ferry, _ server: TestHTTPServer, seed: Int, _ body: () async throws -> Void) async throws {
        let waiting = try FerryBinary.start(
            ["download", server.baseURL + "/bytes/200000?seed=\(seed)&stallAfter=1000&stallSeconds=3", "--wait", "-o", "slow.bin"],
            in: ferry.scratch.url, environment: ferry.environment)
        try await FerryBinary.killed(waiting) {
            // Once ferryd has the task, the first process owns ferry.cli.
            try await ferry.waitFor(task: 1, state: "running")
            try await body()
        }
        let first = try await FerryBinary.wait(waiting, timeout: 30)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try sha256Hex(ofFile: ferry.scratch.path("slow.bin")) == TestContent.sha256Hex(count: 200_000, seed: UInt64(seed)))
    }

    @Test("while download --wait owns the CLI's session, a second download, a second --wait, pause, resume and cancel from another shell go through")
    func secondDownloadWhileWaitOwns() async throws {
        try await withFerry { ferry, server in
            try await whileAWaitOwnsTheSession(ferry, server, seed: 26) {
                let second = try await ferry.run(["download", server.baseURL + "/bytes/3000?seed=27", "-o", "second.bin"])
                #expect(second.status == 0, "\(second.stderr)")
                let third = try await ferry.run(["download", server.baseURL + "/bytes/4000?seed=28", "-o", "third.bin", "--wait", "--json"])
                #expect(third.status == 0, "\(third.stdout) \(third.stderr)")
                #expect(Self.real(third.json?["destination"] as? String ?? "") == Self.real(ferry.scratch.path("third.bin")))
                _ = try await completed(try Self.taskID(second), ferry)
                // And pause, resume and cancel one from here too.
                let later = try Self.taskID(try await ferry.run(["download", server.baseURL + "/bytes/10?seed=29", "--after", "3600", "-o", "later.bin"]))
                for (verb, state) in [("pause", "suspended"), ("resume", "waiting"), ("cancel", "cancelled")] {
                    let run = try await ferry.run([verb, "\(later)", "--json"])
                    #expect(run.json?["state"] as? String == state, "\(verb): \(run.stdout) \(run.stderr)")
                }
            }
            #expect(try sha256Hex(ofFile: ferry.scratch.path("second.bin")) == TestContent.sha256Hex(count: 3000, seed: 27))
            #expect(try sha256Hex(ofFile: ferry.scratch.path("third.bin")) == TestContent.sha256Hex(count: 4000, seed: 28))
        }
    }

    @Test("the CLI's events do not pile up: after 6 downloads and an upload without --wait, ferryd has no event waiting")
    func eventsDoNotAccumulate() async throws {
        try await withFerry { ferry, server in
            var ids: [Int] = []
            for round in 1...6 {
                let run = try await ferry.run(["download", server.baseURL + "/bytes/\(1000 * round)?seed=\(round)", "-o", "f\(round).bin"])
                ids.append(try Self.taskID(run))
            }
            let file = ferry.scratch.path("up.txt")
            try Data("hello".utf8).write(to: URL(fileURLWithPath: file))
            ids.append(try Self.taskID(try await ferry.run(["upload", file, server.baseURL + "/upload/up.txt"])))
            for id in ids { _ = try await completed(id, ferry) }
            var last: [String: Any]?
            try await poll(until: "no event to wait in ferryd", timeout: .seconds(10), every: .milliseconds(100),
                           observed: "daemon status: \(last.map { "\($0)" } ?? "none")") {
                last = try await ferry.run(["daemon", "status", "--json"]).json
                return last?["undeliveredEventCount"] as? Int == 0
            }
            let metrics = try await ferry.run(["daemon", "metrics"])
            #expect(metrics.stdout.contains("ferryd_events_waiting 0.0"), "\(metrics.stdout)")
            for round in 1...6 {
                #expect(try sha256Hex(ofFile: ferry.scratch.path("f\(round).bin")) == TestContent.sha256Hex(count: 1000 * round, seed: UInt64(round)))
            }
        }
    }
}
