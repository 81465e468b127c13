// BatchDownload against the project's test server and nginx (https): bytes by SHA-256, the
// connection limit, what is handed back to a session, and that a failed item leaves no file.
import FerryCore
import FerryBatch
import FerryEngine
import FerryTestSupport
import Foundation
import NIOPosix
import Testing

@Suite struct BatchDownloadTests {
    /// Runs `body` with a started server and an empty folder, removing both after.
    private func withServer(_ body: (TestHTTPServer, URL) async throws -> Void) async throws {
        let server = try await TestHTTPServer.start()
        let folder = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try await body(server, folder)
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    private func item(_ server: TestHTTPServer, _ path: String, _ folder: URL, _ name: String) -> BatchDownload.Item {
        BatchDownload.Item(url: URL(string: server.baseURL + path)!, destination: folder.appendingPathComponent(name).path)
    }

    private func names(in folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test func savesEveryBodyOverAtMostTheGivenConnections() async throws {
        try await withServer { server, folder throws in
            // Empty, tiny, one socket read, many reads, chunked, and a body longer than a pipe.
            let sizes = [0, 1, 16_384, 300_000, 70_000] + (0..<35).map { 1_000 + $0 * 37 }
            let items = sizes.enumerated().map { index, size in
                item(server, "/bytes/\(size)?seed=\(index)" + (index == 4 ? "&chunked=1" : ""), folder, "file\(index)")
            }
            var batch = BatchDownload()
            batch.connectionsPerHost = 3
            let reported = Reports()
            let outcomes = await batch.run(items) { index, _ in reported.add(index) }

            for (index, size) in sizes.enumerated() {
                guard case .saved(let bytes) = outcomes[index] else {
                    Issue.record("item \(index): \(outcomes[index])")
                    continue
                }
                #expect(bytes == Int64(size))
                let digest = try TestFiles.sha256Hex(ofFile: folder.appendingPathComponent("file\(index)"))
                #expect(digest == TestContent.sha256Hex(count: size, seed: UInt64(index)))
            }
            #expect(reported.sorted == Array(0..<sizes.count), "one report per item")
            let saved = try names(in: folder)
            #expect(saved.count == sizes.count, "no temporary files left: \(saved)")
            #expect(server.maxConcurrentConnections <= 3)
            #expect(server.totalConnections <= 3, "kept-alive connections are reused")
        }
    }

    @Test func connectionsInAllStayUnderTheCapAcrossHosts() async throws {
        var servers: [TestHTTPServer] = []
        for _ in 0..<3 { servers.append(try await TestHTTPServer.start()) }
        let folder = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        var items: [BatchDownload.Item] = []
        for round in 0..<8 {
            for (n, server) in servers.enumerated() {
                // Each answer takes ~30 ms, so connections to different hosts overlap.
                items.append(item(server, "/bytes/3000?seed=\(round)&drip=100000", folder, "s\(n)-\(round)"))
            }
        }
        var batch = BatchDownload()
        batch.connectionsPerHost = 6
        batch.maximumConnections = 2
        let outcomes = await batch.run(items)
        for (index, outcome) in outcomes.enumerated() {
            guard case .saved(3000) = outcome else {
                Issue.record("\(items[index].url): \(outcome)")
                continue
            }
        }
        for server in servers {
            #expect(server.maxConcurrentConnections <= 2)
            try await server.shutdown()
        }
        #expect(try names(in: folder).count == items.count)
    }

    @Test func aStatusIsTheAnswerAndARedirectIsHandedBack() async throws {
        try await withServer { server, folder throws in
            let items = [
                item(server, "/status/404", folder, "missing"),
                item(server, "/status/503?retryAfter=1", folder, "busy"),
                item(server, "/redirect/1?to=/bytes/10", folder, "moved"),
                BatchDownload.Item(url: URL(string: "https://127.0.0.1:9/closed")!, destination: folder.appendingPathComponent("closed").path),
                BatchDownload.Item(url: URL(string: "ftp://127.0.0.1/file")!, destination: folder.appendingPathComponent("ftp").path),
                item(server, "/bytes/10?seed=3", folder, "plain"),
            ]
            let outcomes = await BatchDownload().run(items)
            guard case .answered(404) = outcomes[0], case .answered(503) = outcomes[1] else {
                Issue.record("statuses: \(outcomes[0]), \(outcomes[1])")
                return
            }
            for index in 2..<5 {
                guard case .handedBack = outcomes[index] else {
                    Issue.record("\(items[index].url): \(outcomes[index])")
                    continue
                }
            }
            if case .handedBack(let why) = outcomes[2] { #expect(why.contains("302")) }
            guard case .saved(10) = outcomes[5] else {
                Issue.record("plain: \(outcomes[5])")
                return
            }
            #expect(try names(in: folder) == ["plain"], "a status or a handed-back item writes nothing")
            #expect(server.requests.filter { $0.uri.hasPrefix("/status/503") }.count == 1, "no retry without a policy")
        }
    }

    @Test func a503IsAskedAgainAfterRetryAfterWhenThePolicyAllows() async throws {
        try await withServer { server, folder throws in
            let key = UUID().uuidString
            var batch = BatchDownload()
            batch.retryPolicy = RetryPolicy(maximumAttempts: 3)
            let started = ContinuousClock.now
            let outcomes = await batch.run([
                item(server, "/flaky/\(key)?failures=1&status=503&retryAfter=1&then=/bytes/100%3Fseed%3D6", folder, "busy-then-ok"),
                item(server, "/flaky/\(key)-always?failures=9&status=503&retryAfter=0", folder, "always-busy"),
            ])
            guard case .saved(100) = outcomes[0] else {
                Issue.record("retried: \(outcomes[0])")
                return
            }
            #expect(ContinuousClock.now - started >= .seconds(1), "Retry-After: 1 was honoured")
            #expect(try TestFiles.sha256Hex(ofFile: folder.appendingPathComponent("busy-then-ok")) == TestContent.sha256Hex(count: 100, seed: 6))
            guard case .answered(503) = outcomes[1] else {
                Issue.record("attempts used up: \(outcomes[1])")
                return
            }
            #expect(server.requests.filter { $0.uri.contains("-always") }.count == 3, "maximumAttempts requests in all")
        }
    }

    @Test func aBodyCutShortLeavesNoFile() async throws {
        try await withServer { server, folder throws in
            let items = [
                item(server, "/bytes/200000?dropAlways=5000", folder, "dropped"),
                item(server, "/bytes/1000?lengthDelta=10", folder, "short"),
                item(server, "/garbage", folder, "garbage"),
                item(server, "/bytes/500?seed=1", folder, "whole"),
            ]
            var batch = BatchDownload()
            batch.connectionsPerHost = 2
            let outcomes = await batch.run(items)
            for index in 0..<3 {
                guard case .handedBack = outcomes[index] else {
                    Issue.record("\(items[index].url): \(outcomes[index])")
                    continue
                }
            }
            #expect(try names(in: folder) == ["whole"])
            #expect(try TestFiles.sha256Hex(ofFile: folder.appendingPathComponent("whole")) == TestContent.sha256Hex(count: 500, seed: 1))
        }
    }

    @Test func aDigestThatDoesNotMatchFailsAndSavesNothing() async throws {
        try await withServer { server, folder throws in
            let items = [
                item(server, "/bytes/5000?seed=2&digest=bad", folder, "bad"),
                item(server, "/bytes/5000?seed=2&digest=good", folder, "good"),
            ]
            let outcomes = await BatchDownload().run(items)
            guard case .failed(let error) = outcomes[0] else {
                Issue.record("bad digest: \(outcomes[0])")
                return
            }
            #expect(error.code == .integrityCheckFailed)
            guard case .saved(5000) = outcomes[1] else {
                Issue.record("good digest: \(outcomes[1])")
                return
            }
            #expect(try names(in: folder) == ["good"])
        }
    }

    @Test func cancellingTheTaskStopsTheBatchAndLeavesNoFile() async throws {
        try await withServer { server, folder throws in
            let key = UUID().uuidString
            var items = [
                item(server, "/bytes/100000?stallAfter=10000&stallSeconds=30", folder, "stalled"),
                item(server, "/flaky/\(key)?failures=5&status=503&retryAfter=60", folder, "waiting-out-retry-after"),
            ]
            items += (0..<20).map { item(server, "/bytes/1000?seed=\($0)&stallAfter=0&stallSeconds=30", folder, "queued\($0)") }
            var batch = BatchDownload()
            batch.connectionsPerHost = 2
            batch.retryPolicy = RetryPolicy(maximumAttempts: 3)
            let (configured, list) = (batch, items)
            let running = Task { await configured.run(list) }
            try await poll(until: "the stalled and the retried download to reach the server", timeout: .seconds(30),
                           observed: "requests: \(server.requests.map(\.uri))") { server.requests.count >= 2 }
            try await Task.sleep(for: .milliseconds(200))
            let cancelledAt = ContinuousClock.now
            running.cancel()
            let outcomes = await running.value
            // Far below the 30 s the server stalls (a parallel run on two cores can stall for seconds).
            #expect(ContinuousClock.now - cancelledAt < .seconds(10), "the run ends when cancelled, not when the server does")
            for (index, outcome) in outcomes.enumerated() {
                guard case .failed(let error) = outcome, error.code == .cancelled else {
                    Issue.record("\(items[index].url): \(outcome)")
                    continue
                }
            }
            #expect(try names(in: folder).isEmpty)
        }
    }

    @Test func aStalledServerTimesOut() async throws {
        try await withServer { server, folder throws in
            let stalled = item(server, "/bytes/10000?stallAfter=1000&stallSeconds=20", folder, "stalled")
            var batch = BatchDownload()
            batch.idleTimeout = .milliseconds(300)
            let started = ContinuousClock.now
            let outcomes = await batch.run([stalled])
            #expect(ContinuousClock.now - started < .seconds(10), "the idle time-out, not the server's 20 s stall")
            guard case .failed(let error) = outcomes[0] else {
                Issue.record("stalled: \(outcomes[0])")
                return
            }
            #expect(error.code == .timedOut)

            batch.handsBackTimeouts = true
            let again = await batch.run([stalled])
            guard case .handedBack = again[0] else {
                Issue.record("stalled, handing back: \(again[0])")
                return
            }
            #expect(try names(in: folder).isEmpty)
        }
    }

    @Test func theWholeRequestTimeOutHoldsWhileBytesDrip() async throws {
        try await withServer { server, folder throws in
            var batch = BatchDownload()
            batch.resourceTimeout = .milliseconds(500)
            let outcomes = await batch.run([item(server, "/bytes/100000?drip=20000", folder, "slow")])
            guard case .failed(let error) = outcomes[0] else {
                Issue.record("dripping: \(outcomes[0])")
                return
            }
            #expect(error.code == .timedOut)
            #expect(try names(in: folder).isEmpty)
        }
    }

    @Test func aConnectionClosedBeforeAnyAnswerIsTriedOnceMore() async throws {
        try await withServer { server, folder throws in
            let key = UUID().uuidString
            let outcomes = await BatchDownload().run([
                item(server, "/flaky/\(key)?failures=1&status=close&then=/bytes/100", folder, "once"),
                item(server, "/flaky/\(key)-twice?failures=2&status=close&then=/bytes/100", folder, "twice"),
            ])
            guard case .saved(100) = outcomes[0] else {
                Issue.record("closed once: \(outcomes[0])")
                return
            }
            guard case .handedBack = outcomes[1] else {
                Issue.record("closed twice: \(outcomes[1])")
                return
            }
        }
    }

    @Test func aHostThatRefusesHandsBackEveryItem() async throws {
        let folder = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = try await closedPort()
        let items = (0..<20).map {
            BatchDownload.Item(url: URL(string: "http://127.0.0.1:\(port)/f\($0)")!, destination: folder.appendingPathComponent("f\($0)").path)
        }
        let outcomes = await BatchDownload().run(items)
        for outcome in outcomes {
            guard case .handedBack(let why) = outcome else {
                Issue.record("refused: \(outcome)")
                continue
            }
            #expect(why.contains("connect"), "\(why)")
        }
        #expect(try names(in: folder).isEmpty)
    }

    @Test func replacesAFileAlreadyThereAndSendsTheHeaders() async throws {
        try await withServer { server, folder throws in
            let old = folder.appendingPathComponent("same")
            try Data("old content".utf8).write(to: old)
            var batch = BatchDownload()
            batch.headers = ["Authorization": "Bearer batch-token", "X-Ferry-Test": "1"]
            let outcomes = await batch.run([
                item(server, "/bytes/2000?seed=9", folder, "same"),
                item(server, "/headers", folder, "headers.json"),
            ])
            guard case .saved(2000) = outcomes[0], case .saved = outcomes[1] else {
                Issue.record("\(outcomes)")
                return
            }
            #expect(try TestFiles.sha256Hex(ofFile: old) == TestContent.sha256Hex(count: 2000, seed: 9))
            let headers = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("headers.json"))) as? [String: Any]
            #expect(headers?["authorization"] as? String == "Bearer batch-token")
            #expect(headers?["x-ferry-test"] as? String == "1")
            #expect(headers?["host"] as? String == "127.0.0.1:\(server.port)")
            #expect(try names(in: folder) == ["headers.json", "same"])
        }
    }

    @Test func aFolderThatCannotBeWrittenFailsTheItem() async throws {
        try await withServer { server, folder throws in
            let missing = folder.appendingPathComponent("no-such-folder/file").path
            let outcomes = await BatchDownload().run([
                BatchDownload.Item(url: URL(string: server.baseURL + "/bytes/100")!, destination: missing),
                item(server, "/bytes/100", folder, "fine"),
            ])
            guard case .failed(let error) = outcomes[0] else {
                Issue.record("missing folder: \(outcomes[0])")
                return
            }
            #expect(error.code == .cannotWriteToFile)
            guard case .saved(100) = outcomes[1] else {
                Issue.record("fine: \(outcomes[1])")
                return
            }
        }
    }

    @Test func httpsFromNginxWhenItsCertificateIsTrustedOnly() async throws {
        let nginx = try await NginxServer.start(tls: true)
        let folder = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            for index in 0..<12 {
                try Data(TestContent.bytes(count: 20_000 + index, seed: UInt64(index))).write(to: nginx.root.appendingPathComponent("s\(index)"))
            }
            let base = try #require(nginx.httpsBaseURL)
            let items = (0..<12).map {
                BatchDownload.Item(url: URL(string: "\(base)/s\($0)")!, destination: folder.appendingPathComponent("s\($0)").path)
            }
            var batch = BatchDownload()
            batch.connectionsPerHost = 3
            let untrusted = await batch.run(items)
            for outcome in untrusted {
                guard case .handedBack = outcome else {
                    Issue.record("untrusted certificate: \(outcome)")
                    continue
                }
            }
            #expect(try names(in: folder).isEmpty)

            batch.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]
            let outcomes = await batch.run(items)
            for (index, outcome) in outcomes.enumerated() {
                guard case .saved(let bytes) = outcome else {
                    Issue.record("s\(index): \(outcome)")
                    continue
                }
                #expect(bytes == Int64(20_000 + index))
                let digest = try TestFiles.sha256Hex(ofFile: folder.appendingPathComponent("s\(index)"))
                #expect(digest == TestContent.sha256Hex(count: 20_000 + index, seed: UInt64(index)))
            }
            try await nginx.stop()
        } catch {
            try? await nginx.stop()
            throw error
        }
    }

    /// A port on 127.0.0.1 that nothing listens on (bound, then closed).
    private func closedPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 9
        try await channel.close()
        return port
    }
}

/// Item indexes reported by `onOutcome`, from whichever event loop.
private final class Reports: @unchecked Sendable {  // state behind `lock`
    private let lock = NSLock()
    private var indexes: [Int] = []
    func add(_ index: Int) { lock.withLock { indexes.append(index) } }
    var sorted: [Int] { lock.withLock { indexes.sorted() } }
}
