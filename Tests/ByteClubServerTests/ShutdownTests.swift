import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM of the real binary: idle keep-alive connections do not hold the exit up; a request
/// in flight may finish within the grace period; one that does not is cut off when the period
/// ends, the process exits within the bound, and the file it was uploading is not stored in part.
@Suite("byteclub-server shutdown", .serialized)
struct ShutdownTests {
    typealias Server = ServerProcessTests
    static let auth = ("Authorization", "Bearer kill-token")

    /// Seconds from `start` until `process` has exited (bounded by `limit`, then SIGKILL and a failure).
    static func secondsUntilExit(_ process: Process, since start: ContinuousClock.Instant, limit: Double) async throws -> Double {
        try await Server.waitForExit(process, seconds: limit)
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    @Test func idleKeepAliveConnectionsDoNotDelayTheExit() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The default grace period (10 s): waiting on any of these connections would show.
        try await Server.withServer(dataDirectory: directory) { running in
            // A keep-alive connection that served a request and stays open…
            let open = try RawHTTP(port: running.port)
            try await open.head("GET", "/1/metadata/dropbox/", [Self.auth])
            #expect(try await open.readFinal().final.status == 200)
            // …one that served a request and was closed by its client…
            do {
                let gone = try RawHTTP(port: running.port)
                try await gone.head("PUT", "/1/files_put/dropbox/a.txt", [Self.auth, ("Content-Length", "2")])
                try await gone.send("hi")
                #expect(try await gone.readFinal().final.status == 200)
            }
            // …and one that never sent a request.
            let silent = try RawHTTP(port: running.port)
            try await Task.sleep(for: .milliseconds(200))

            let signalled = ContinuousClock.now
            kill(running.process.processIdentifier, SIGTERM)
            let seconds = try await Self.secondsUntilExit(running.process, since: signalled, limit: 12)
            #expect(seconds < 3, "exits at once with only idle connections, not after the 10 s grace period (after \(seconds) s)")
            #expect(running.process.terminationReason == .exit)
            #expect(running.process.terminationStatus == 0)
            #expect(await open.readUntilClosed().isEmpty, "the idle keep-alive connection is closed, with no answer")
            #expect(await silent.readUntilClosed().isEmpty)
            #expect(try String(contentsOfFile: running.output, encoding: .utf8).contains("stopped"))
        }
    }

    @Test func aSlowUploadThatNeverEndsIsCutOffAfterTheGracePeriodAndNotStored() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let original = Bytes.pattern(64 << 10, seed: 3)
        try await Server.withServer(dataDirectory: directory, arguments: ["--shutdown-grace", "2"]) { running in
            #expect(try await Server.request(running.port, "PUT", "/1/files_put/dropbox/slow.bin", body: original).status == 200)

            // Overwrite it with 8 MiB, of which only 1 MiB is ever sent; an idle keep-alive
            // connection is open beside it.
            let idle = try RawHTTP(port: running.port)
            try await idle.head("GET", "/1/metadata/dropbox/", [Self.auth])
            #expect(try await idle.readFinal().final.status == 200)
            let upload = try RawHTTP(port: running.port)
            try await upload.head("PUT", "/1/files_put/dropbox/slow.bin", [Self.auth, ("Content-Length", "\(8 << 20)")])
            try await upload.send(Bytes.pattern(1 << 20, seed: 4))
            try await Task.sleep(for: .milliseconds(300))

            let signalled = ContinuousClock.now
            kill(running.process.processIdentifier, SIGTERM)
            // No new connections once shutdown began.
            try await poll(until: "the listening socket to close during the grace period", timeout: .seconds(2), every: .milliseconds(50),
                           observed: "connections to port \(running.port) still accepted") {
                (try? RawHTTP(port: running.port)) == nil
            }
            #expect(await idle.readUntilClosed().isEmpty, "the idle connection is closed without an answer")
            let idleClosedAfter = ContinuousClock.now - signalled
            #expect(idleClosedAfter < .milliseconds(1500), "the idle connection is closed at once, not when the grace period ends (\(idleClosedAfter))")
            let seconds = try await Self.secondsUntilExit(running.process, since: signalled, limit: 12)
            #expect(seconds >= 1.8, "the in-flight upload had its grace period (exited after \(seconds) s)")
            #expect(seconds < 7, "exit within grace (2 s) + hard stop (3 s) + start-up slack (exited after \(seconds) s)")
            #expect(running.process.terminationReason == .exit)
            #expect(running.process.terminationStatus == 0)
            #expect(await upload.readUntilClosed().isEmpty, "the cut-off upload got no success answer")
            let output = try String(contentsOfFile: running.output, encoding: .utf8)
            #expect(output.contains("stopped"))
        }

        // Nothing of the partial upload is stored: no temp file, only the original's blob.
        let temps = TestServer.tempFiles(directory)
        #expect(temps.isEmpty, "the cut-off upload's temp file is removed: \(temps)")
        try await Server.withServer(dataDirectory: directory) { again in
            let after = try await Server.request(again.port, "GET", "/1/files/dropbox/slow.bin")
            #expect(after.status == 200)
            #expect(Bytes.sha256(after.body) == Bytes.sha256(original))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/files/blobs").count == 1)
        }
    }

    @Test func anUploadThatFinishesWithinTheGracePeriodIsStored() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = Bytes.pattern(4 << 20, seed: 5)
        try await Server.withServer(dataDirectory: directory, arguments: ["--shutdown-grace", "10"]) { running in
            // A keep-alive upload (no `Connection: close`): once answered, its connection is
            // idle, and the exit must not wait for it.
            let upload = try RawHTTP(port: running.port)
            try await upload.head("PUT", "/1/files_put/dropbox/finished.bin", [Self.auth, ("Content-Length", "\(body.count)")])
            try await upload.send(Array(body[..<(1 << 20)]))
            try await Task.sleep(for: .milliseconds(300))

            let signalled = ContinuousClock.now
            kill(running.process.processIdentifier, SIGTERM)
            try await Task.sleep(for: .milliseconds(500))
            #expect(running.process.isRunning, "still serving the upload in flight")
            try await upload.send(Array(body[(1 << 20)...]))
            let stored = try await upload.readFinal().final
            #expect(stored.status == 200)
            #expect(stored.text.contains("\"bytes\":\(body.count)"))
            let seconds = try await Self.secondsUntilExit(running.process, since: signalled, limit: 12)
            #expect(seconds < 5, "exits once the upload finished, well before the 10 s grace period (after \(seconds) s)")
            #expect(running.process.terminationStatus == 0)
        }

        try await Server.withServer(dataDirectory: directory) { again in
            let after = try await Server.request(again.port, "GET", "/1/files/dropbox/finished.bin")
            #expect(Bytes.sha256(after.body) == Bytes.sha256(body))
        }
    }
}
