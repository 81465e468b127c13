import Ferry
import FerryApps
import FerryTestSupport
import Foundation
import Testing

/// The share-extension story end to end, with real programs: `photodrop-share` (the extension)
/// hands an image upload to the group's background session and exits; ferryd uploads it to
/// byteclub-server's images API; nobody is connected, so ferryd launches `photodrop` (the
/// containing app, never the extension), which reconnects, records the one completion with
/// the server's JSON, is told that the events are finished, and exits.
@Suite("PhotoDrop: an extension hands off, ferryd relaunches the app", .serialized, .timeLimit(.minutes(2)))
struct PhotoDropTests {
    @Test("the extension exits within 100 ms of resume(); the app is launched and records exactly one completion carrying the server's response")
    func extensionUploadsAppIsLaunched() async throws {
        let daemon = try await DaemonHarness.start()
        defer { daemon.stop() }
        let server = try await ByteClubProcess.start(clientID: "photodrop-client")
        defer { server.stop() }
        let app = try BuiltProducts.path(of: "photodrop")
        let shareExtension = try BuiltProducts.path(of: "photodrop-share")
        let registry = AppRegistry(paths: FerryPaths(dataDirectory: daemon.dataDirectory, runtimeDirectory: daemon.runtimeDirectory))
        try registry.install(AppManifest(
            bundleIdentifier: "org.ferry.photodrop", name: "PhotoDrop",
            executables: [app], launch: [app],
            appGroups: [PhotoDropConstants.group],
            extensions: [ExtensionManifest(
                bundleIdentifier: "org.ferry.photodrop.share", name: "Share to PhotoDrop",
                executables: [shareExtension], backgroundSessionIdentifier: PhotoDropConstants.session)]))

        let scratch = try makeTemporaryDirectory()
        let image = scratch.appendingPathComponent("cow.jpg")
        try runTool("/usr/bin/convert", ["-size", "640x480", "gradient:sienna-khaki", image.path])
        let imageBytes = try Data(contentsOf: image)

        // The extension: prints the monotonic time right after resume(), then exits.
        let share = Process()
        share.executableURL = URL(fileURLWithPath: shareExtension)
        // A request bin for the extension's short, in-process note (no background session).
        var createBin = Request(url: URL(string: "\(server.baseURL)/bins")!, method: "POST")
        createBin.body = Data()
        // A request to the server that fails says whether it still runs and what it printed (a
        // fresh-clone CI run was refused once at the last request, after it had served the others).
        func fetch(_ request: Request) async throws -> Data {
            do {
                return try await Session.shared.data(for: request).0
            } catch {
                throw HarnessError("\(request.method) \(request.url.path) failed: \(error); \(server.state)")
            }
        }
        let binJSON = try await fetch(createBin)
        let binURL = try #require((try JSONSerialization.jsonObject(with: binJSON) as? [String: Any])?["url"] as? String)
        share.arguments = [image.path, "\(server.baseURL)/3/image", "Client-ID photodrop-client", "--announce", binURL]
        share.environment = ProcessInfo.processInfo.environment.merging(daemon.environment) { $1 }
        let output = scratch.appendingPathComponent("share.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        share.standardOutput = try FileHandle(forWritingTo: output)
        let exited = ExitClock()
        share.terminationHandler = { _ in exited.mark() }
        try share.run()
        try await waitForExit(share)
        // Foundation runs the termination handler on its own thread, possibly just after
        // isRunning turned false (a fresh-clone CI run read nil here): wait for it.
        try await poll(until: "the extension's termination handler to run", timeout: .seconds(1), every: .milliseconds(5)) { exited.value != nil }
        #expect(share.terminationStatus == 0)
        let printed = try String(contentsOf: output, encoding: .utf8).split(separator: "\n")
        let resumedAt = try #require(printed.first { $0.hasPrefix("resumed-at ") }.flatMap { UInt64($0.dropFirst("resumed-at ".count)) })
        let exitedAt = try #require(exited.value)
        let exitMilliseconds = Double(exitedAt - resumedAt) / 1e6
        #expect(exitMilliseconds < 100, "the extension took \(exitMilliseconds) ms to exit after resume()")

        // ferryd uploads, finds nobody connected, and launches the app; the app records.
        let log = FerryPaths(dataDirectory: daemon.dataDirectory, runtimeDirectory: daemon.runtimeDirectory)
            .containerURL(forGroup: PhotoDropConstants.group).appendingPathComponent("uploads.jsonl")
        func recorded() -> [[String: Any]] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        try await poll(until: "the launched app to record the upload in \(log.lastPathComponent)", timeout: .seconds(30), every: .milliseconds(50),
                       observed: "its log: \((try? String(contentsOf: daemon.logFile, encoding: .utf8))?.suffix(2000) ?? "")") {
            !recorded().isEmpty
        }
        try await Task.sleep(for: .milliseconds(500))  // a second completion, if any, would land now
        let records = recorded()
        #expect(records.count == 1)
        let record = try #require(records.first)
        #expect(record["handledBy"] as? String == "app")
        #expect(record["status"] as? Int == 200)
        #expect(record["error"] == nil)
        let response = try #require((record["response"] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        let data = try #require(response["data"] as? [String: Any])
        #expect(data["width"] as? Int == 640)
        #expect(data["height"] as? Int == 480)
        #expect(data["size"] as? Int == imageBytes.count)
        // The server holds the very bytes.
        let link = try #require((data["link"] as? String).flatMap(URL.init(string:)))
        let stored = try await fetch(Request(url: link))
        #expect(sha256Hex(stored) == sha256Hex(imageBytes))
        // The short note went out in-process before the hand-off.
        #expect(printed.contains("announced 200"))
        let binRequests = try await fetch(Request(url: URL(string: binURL + "/requests")!))
        let notes = try #require(try JSONSerialization.jsonObject(with: binRequests) as? [Any])
        #expect(notes.count == 1)
        #expect("\(notes)".contains("cow.jpg"))
        // ferryd launched the app, not the extension.
        let launchLog = daemon.dataDirectory.appendingPathComponent("logs/org.ferry.photodrop.log")
        #expect(FileManager.default.fileExists(atPath: launchLog.path))
        #expect(!FileManager.default.fileExists(atPath: daemon.dataDirectory.appendingPathComponent("logs/org.ferry.photodrop.share.log").path))
    }
}

extension PhotoDropTests {
    @Test("SIGTERM during a short in-process request (ProcessActivity) waits until it is answered, then ends the process as SIGTERM would")
    func expiringActivityDefersTermination() async throws {
        let daemon = try await DaemonHarness.start()
        defer { daemon.stop() }
        try await withServer { server in
            let shareExtension = try BuiltProducts.path(of: "photodrop-share")
            let scratch = try makeTemporaryDirectory()
            let file = scratch.appendingPathComponent("note.bin")
            try Data("x".utf8).write(to: file)
            let share = Process()
            share.executableURL = URL(fileURLWithPath: shareExtension)
            // The note's server answers after 1.5 s; SIGTERM comes at 0.3 s.
            share.arguments = [file.path, server.url("/upload/never").absoluteString, "--announce", server.url("/delay/1500").absoluteString]
            share.environment = ProcessInfo.processInfo.environment.merging(daemon.environment) { $1 }
            let output = scratch.appendingPathComponent("out")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            share.standardOutput = try FileHandle(forWritingTo: output)
            let started = ContinuousClock.now
            try share.run()
            try await Task.sleep(for: .milliseconds(300))
            kill(share.processIdentifier, SIGTERM)
            try await waitForExit(share)
            let elapsed = ContinuousClock.now - started
            #expect(share.terminationReason == .uncaughtSignal)
            #expect(share.terminationStatus == SIGTERM)
            #expect(elapsed >= .milliseconds(1400), "the process ended before the short request was answered")
            #expect(try String(contentsOf: output, encoding: .utf8).contains("announced 200"))
            // It ended right after the note, as asked: the upload was never handed over.
            #expect(server.requests.filter { $0.path.hasPrefix("/upload/never") }.isEmpty)
        }
    }
}

enum PhotoDropConstants {
    static let group = "group.org.ferry.photodrop"
    static let session = "org.ferry.photodrop.upload"
}

/// CLOCK_MONOTONIC in nanoseconds, the clock the extension prints.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Waits for `process` without holding a thread: the test servers answer on Swift's
/// cooperative pool (two threads here), and a blocked wait starved them under a full run.
/// Past `timeout` it is killed with SIGKILL, and the wait fails.
func waitForExit(_ process: Process, timeout: Duration = .seconds(60)) async throws {
    do {
        try await poll(until: "\(process.executableURL?.lastPathComponent ?? "process") to exit", timeout: timeout, every: .milliseconds(10)) {
            !process.isRunning
        }
    } catch {
        kill(process.processIdentifier, SIGKILL)
        throw error
    }
    process.waitUntilExit()  // reaped already: returns at once
}

/// When a process was seen to exit.
final class ExitClock: @unchecked Sendable {  // written once by the termination handler, read after waitUntilExit
    private let lock = NSLock()
    private var at: UInt64?
    func mark() { lock.withLock { at = monotonicNanoseconds() } }
    var value: UInt64? { lock.withLock { at } }
}

func runTool(_ path: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw HarnessError("\(path) \(arguments) failed with \(process.terminationStatus)") }
}

/// byteclub-server, the real binary, on a free port with a fresh data folder.
struct ByteClubProcess {
    let process: Process
    let baseURL: String
    let directory: URL

    static func start(clientID: String) async throws -> ByteClubProcess {
        let binary = try BuiltProducts.path(of: "byteclub-server")
        let directory = try makeTemporaryDirectory()
        let output = directory.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let errors = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--port", "0", "--data-dir", directory.appendingPathComponent("data").path,
                             "--dev-client-id", clientID, "--log-level", "warning"]
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        func printed() -> String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
        do {
            let port = try await eventually("byteclub-server to print the port it listens on", timeout: .seconds(15), every: .milliseconds(50),
                                            observed: "its output: \(printed())") { () throws -> Int? in
                if let port = ServerOutput.listeningPort(in: printed()) { return port }
                guard process.isRunning else { throw HarnessError("byteclub-server exited: \(printed())") }
                return nil
            }
            return ByteClubProcess(process: process, baseURL: "http://127.0.0.1:\(port)", directory: directory)
        } catch {
            process.terminate()
            throw error
        }
    }

    /// Whether it still runs, and what it printed: for a request to it that failed.
    var state: String {
        let out = (try? String(contentsOf: directory.appendingPathComponent("stdout"), encoding: .utf8)) ?? ""
        let err = (try? String(contentsOf: directory.appendingPathComponent("stderr"), encoding: .utf8)) ?? ""
        return "byteclub-server \(process.isRunning ? "runs" : "exited with \(process.terminationStatus)"); stdout: \(out.suffix(800)); stderr: \(err.suffix(1500))"
    }

    func stop() {
        // SIGKILL: its graceful stop is byteclub-server's own tests' business, and waiting
        // for one here would hold a cooperative thread the test servers need.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
