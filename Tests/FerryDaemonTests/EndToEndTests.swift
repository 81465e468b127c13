import FerryCore
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real `ferryd` process and a raw protocol client: what a library sees on the socket.
@Suite("ferryd end to end (real process)", .serialized)
struct EndToEndTests {
    @Test("attach, submit a download and an upload, events in order as they commit, acknowledge; reconnect gets unacknowledged events again")
    func submitEventsAcknowledge() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()
        let body = try makeFile(ferryd.root, "body.bin", count: 300_000, seed: 5)

        var client = try await RawClient.connected(to: ferryd.socketPath, name: "app")
        guard case .attached(let attached) = try await client.request(.attach("s1")) else { throw TestFailure("not attached") }
        #expect(attached.owner && attached.tasks.isEmpty)
        let download = try await client.submit(.download("s1", server.baseURL + "/bytes/1048576?seed=3"))
        let upload = try await client.submit(.upload("s1", server.baseURL + "/upload", file: body))
        #expect(download.state == .waiting && download.taskIdentifier == 1 && upload.taskIdentifier == 2)

        let events = try await client.events(untilFinished: [1, 2])
        #expect(events.map(\.sequence) == events.map(\.sequence).sorted())
        // Sent as they committed: each says when, at or after the moment it was stored.
        for event in events {
            let stored = try #require(event.storedAt), committed = try #require(event.committedAt, "a live event says when it committed")
            #expect(committed >= stored)
        }
        #expect(events.of(1).map(\.kind.name) == ["response", "downloadFinished", "completed"])
        #expect(events.of(2).map(\.kind.name) == ["response", "data", "completed"])
        guard case .downloadFinished(let finished) = events.of(1)[1].kind else { throw TestFailure("no location") }
        #expect(finished.location.hasPrefix(ferryd.container(session: "s1").path + "/"))
        #expect(try TestFiles.sha256Hex(ofFile: URL(fileURLWithPath: finished.location)) == TestContent.sha256Hex(count: 1 << 20, seed: 3))
        guard case .data(let json) = events.of(2)[1].kind else { throw TestFailure("no data") }
        let answer = try JSONSerialization.jsonObject(with: json) as? [String: Any]
        #expect(answer?["bytes"] as? Int == 300_000)
        #expect(answer?["sha256"] as? String == TestContent.sha256Hex(count: 300_000, seed: 5))
        #expect(try await client.nextPush(timeout: 5).isEventsFinished || client.pushed.contains { $0.isEventsFinished })

        // Not acknowledged: a new connection gets the same events again, same sequences.
        client.close()
        client = try await RawClient.connected(to: ferryd.socketPath, name: "app")
        let again = try await client.attachAfterReconnect("s1")
        #expect(again.tasks.map(\.state) == [.completed, .completed])
        let replayed = try await client.events(untilFinished: [1, 2])
        #expect(replayed.map(\.sequence) == events.map(\.sequence))
        #expect(replayed.allSatisfy { $0.committedAt == nil && $0.storedAt != nil }, "read back from the store: when stored only")

        // Acknowledged: gone, for this connection and the next.
        let last = try #require(events.last?.sequence)
        guard case .acknowledged(let ack) = try await client.request(.acknowledge(Acknowledge(sessionIdentifier: "s1", upToSequence: last)))
        else { throw TestFailure("not acknowledged") }
        #expect(ack.upToSequence == last)
        // Not moved by the app while it handled the event: deleted, as the platform does.
        #expect(!FileManager.default.fileExists(atPath: finished.location))
        client.close()
        client = try await RawClient.connected(to: ferryd.socketPath, name: "app")
        try await client.attachAfterReconnect("s1")
        await #expect(throws: (any Error).self) { try await client.nextPush(timeout: 1.5) }
        #expect(client.pushed.allSatisfy { $0.event == nil })
        try await server.shutdown()
    }

    @Test("a second owner is refused at once; a watcher sees progress but may not change the session; disconnect frees it")
    func ownersAndWatchers() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()

        let owner = try await ferryd.owner(of: "s1")
        let rival = try await RawClient.connected(to: ferryd.socketPath, name: "extension")
        let started = ContinuousClock.now
        let refusal = await #expect(throws: FerryProtocolError.self) { try await rival.request(.attach("s1")) }
        #expect(refusal?.code == .backgroundSessionInUseByAnotherProcess)
        #expect(ContinuousClock.now - started < .seconds(2))

        let watcher = try await RawClient.connected(to: ferryd.socketPath, name: "ferry-cli")
        guard case .attached(let watching) = try await watcher.request(.attach("s1", owner: false)) else { throw TestFailure("no attach") }
        #expect(!watching.owner)
        // ~300 KB at 150 KB/s: two seconds of progress.
        let slow = try await owner.submit(.download("s1", server.baseURL + "/bytes/300000?seed=1&drip=150000"))
        let seen = try await watcher.pushes(timeout: 20) { message in
            if case .progress(let progress) = message { return progress.bytesReceived > 0 }
            return false
        }
        guard case .progress(let progress) = seen.last else { throw TestFailure("no progress") }
        #expect(progress.taskIdentifier == slow.taskIdentifier && progress.sessionIdentifier == "s1")
        // (A watcher may submit and change one task in a session of no app, as this one is:
        // WatcherControlTests; the session itself stays the owner's.)
        for request: FerryProtocol.Request in [
            .acknowledge(Acknowledge(sessionIdentifier: "s1", upToSequence: 1)),
            .invalidate(Invalidate(sessionIdentifier: "s1", cancelTasks: true)),
        ] {
            let error = await #expect(throws: FerryProtocolError.self) { try await watcher.request(request) }
            #expect(error?.code == .notOwner)
        }
        guard case .tasks(let page) = try await watcher.request(.listTasks(ListTasks(sessionIdentifier: "s1"))) else { throw TestFailure("no list") }
        #expect(page.tasks.map(\.taskIdentifier) == [slow.taskIdentifier])
        // The watcher never gets events: the owner does.
        let ownerEvents = try await owner.events(untilFinished: [slow.taskIdentifier])
        #expect(ownerEvents.last?.kind == .completed)
        #expect(watcher.pushed.allSatisfy { $0.event == nil })

        // The owner goes away: the session is free again.
        withExtendedLifetime(owner) {}
        try await owner.request(.invalidate(Invalidate(sessionIdentifier: "s1", cancelTasks: false)))
        guard case .attached(let taken) = try await rival.request(.attach("s1")) else { throw TestFailure("no attach") }
        #expect(taken.owner)
        try await server.shutdown()
    }

    @Test("503 with Retry-After: 2 (real clock): the next request comes no sooner than 2 s later")
    func retryAfterRealClock() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.owner(of: "s")
        let task = try await client.submit(.download("s", server.baseURL + "/flaky/k?failures=1&status=503&retryAfter=2&then=/bytes/1000"))
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        #expect(events.last?.kind == .completed)
        let requests = server.requests
        #expect(requests.count == 2)
        if requests.count == 2 {
            let gap = requests[1].receivedAt - requests[0].receivedAt
            #expect(gap >= .seconds(2), "retried after \(gap)")
            #expect(gap < .seconds(4))
        }
        try await server.shutdown()
    }

    @Test("two ferryd started at once: one serves, the other exits 0 saying one is running")
    func oneDaemonPerUser() async throws {
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp() }
        let binary = try BuiltProducts.path(of: "ferryd")
        var racers: [(Process, Pipe)] = []
        for _ in 0..<3 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.environment = ferryd.environment
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            racers.append((process, pipe))
        }
        defer {
            for (process, _) in racers where process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        // The two that lose exit; the one that won keeps serving (asked for its pid below).
        try await poll(until: "two of the three ferryd to exit", timeout: .seconds(10), every: .milliseconds(50),
                       observed: "\(racers.filter { $0.0.isRunning }.count) still running") {
            racers.filter { !$0.0.isRunning }.count >= 2
        }
        let running = racers.filter { $0.0.isRunning }
        #expect(running.count == 1)
        for (process, pipe) in racers where !process.isRunning {
            #expect(process.terminationStatus == 0)
            #expect(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("already running"))
        }
        // The losers exit as soon as the lock is taken; the winner binds and then listens after
        // that (the socket file exists a moment before a connection is accepted).
        let client = try await eventually("the winning ferryd to answer on \(ferryd.socketPath)", timeout: .seconds(10), every: .milliseconds(20)) {
            try? await RawClient.connected(to: ferryd.socketPath)
        }
        guard case .status(let status) = try await client.request(.status) else { throw TestFailure("no status") }
        #expect(status.pid == running.first?.0.processIdentifier)
        for (process, _) in running {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        #expect(!FileManager.default.fileExists(atPath: ferryd.socketPath), "SIGTERM removes the socket")
    }

    @Test("a socket passed by systemd (LISTEN_FDS, fd 3) is served")
    func systemdSocketActivation() async throws {
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp() }
        let binary = try BuiltProducts.path(of: "ferryd")
        let socketPath = ferryd.root.appendingPathComponent("activated.sock").path
        // What systemd does: bind and listen, pass it as fd 3, set LISTEN_PID to the pid that
        // will exec ferryd and LISTEN_FDS=1.
        let script = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(16)
            os.dup2(s.fileno(), 3); os.set_inheritable(3, True)
            env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
            os.execve(sys.argv[2], [sys.argv[2]], env)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, socketPath, binary]
        process.environment = ferryd.environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let connected = try await eventually("ferryd to answer on the socket passed as fd 3", timeout: .seconds(10), every: .milliseconds(50)) {
            try? await RawClient.connected(to: socketPath)
        }
        guard case .status(let status) = try await connected.request(.status) else { throw TestFailure("no status") }
        #expect(status.pid == process.processIdentifier)
        #expect(!FileManager.default.fileExists(atPath: ferryd.socketPath), "ferryd bound no socket of its own")
    }
}

/// Durability and the submit rules, against a real process.
@Suite("Submitting (real process)", .serialized)
struct SubmitTests {
    @Test("a submitted task survives kill -9 right after the reply; the same idempotency key returns it again")
    func durableAndIdempotent() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        var client = try await RawClient.connected(to: ferryd.socketPath, name: "app")
        try await client.request(.attach("s"))
        var submission = TaskSubmission.download("s", "http://127.0.0.1:9/later", key: "once")
        submission.earliestBeginDate = Date().addingTimeInterval(86_400)
        let first = try await client.submit(submission)
        ferryd.kill9()
        try await ferryd.start()
        client = try await RawClient.connected(to: ferryd.socketPath, name: "app")
        guard case .attached(let attached) = try await client.request(.attach("s")) else { throw TestFailure("no attach") }
        #expect(attached.tasks.map(\.taskIdentifier) == [first.taskIdentifier])
        #expect(attached.tasks.first?.idempotencyKey == "once")
        guard case .submitted(let again) = try await client.request(.submit(submission)) else { throw TestFailure("no reply") }
        #expect(again.existing && again.task.taskIdentifier == first.taskIdentifier)
        guard case .tasks(let page) = try await client.request(.listTasks(ListTasks(sessionIdentifier: "s"))) else { throw TestFailure("no list") }
        #expect(page.tasks.count == 1)
    }

    @Test("what ferryd refuses to store: a missing body file, a destination outside the container, resume data that is not Ferry's")
    func refusedSubmissions() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let client = try await ferryd.owner(of: "s")
        var outside = TaskSubmission.download("s", "http://127.0.0.1:9/x")
        outside.destination = "/etc/ferry-owned.bin"
        var escaping = TaskSubmission.download("s", "http://127.0.0.1:9/x")
        escaping.destination = ferryd.container(session: "s").path + "/../../escape.bin"
        var foreign = TaskSubmission.download("s", "http://127.0.0.1:9/x")
        foreign.resumeData = Data("not resume data".utf8)
        for (submission, mentions) in [
            (TaskSubmission.upload("s", "http://127.0.0.1:9/up", file: ferryd.root.appendingPathComponent("missing.bin")), "body file"),
            (outside, "container"), (escaping, "container"), (foreign, "FERRYRD"),
        ] {
            let error = await #expect(throws: FerryProtocolError.self) { try await client.request(.submit(submission)) }
            #expect(error?.code == .badRequest)
            #expect(error?.message.contains(mentions) == true, "\(error?.message ?? "")")
        }
        guard case .tasks(let page) = try await client.request(.listTasks(ListTasks(sessionIdentifier: "s"))) else { throw TestFailure("no list") }
        #expect(page.tasks.isEmpty)
    }

    @Test("a response body comes in data events of at most 256 KiB; more than 4 MiB fails the task")
    func dataEvents() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.owner(of: "s")
        let small = try await client.submit(TaskSubmission(
            sessionIdentifier: "s", kind: .data, request: TaskRequest(url: URL(string: server.baseURL + "/bytes/600000?seed=8")!)))
        let big = try await client.submit(TaskSubmission(
            sessionIdentifier: "s", kind: .data, request: TaskRequest(url: URL(string: server.baseURL + "/bytes/5000000?seed=8")!)))
        let events = try await client.events(untilFinished: [small.taskIdentifier, big.taskIdentifier])
        let chunks = events.of(small.taskIdentifier).compactMap { if case .data(let d) = $0.kind { d } else { nil } }
        #expect(chunks.map(\.count) == [262_144, 262_144, 75_712])
        #expect(TestFiles.sha256Hex(chunks.reduce(Data(), +)) == TestContent.sha256Hex(count: 600_000, seed: 8))
        guard case .failed(let failure) = events.of(big.taskIdentifier).last?.kind else { throw TestFailure("big did not fail") }
        #expect(failure.code == "dataLengthExceedsMaximum")
        try await server.shutdown()
    }

    @Test("50 submissions sent in one write are stored together, answered each, in order")
    func pipelinedSubmissions() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let client = try await ferryd.owner(of: "s")
        var bytes: [UInt8] = []
        for i in 1...50 {
            var submission = TaskSubmission.download("s", "http://127.0.0.1:9/f\(i)", key: i == 50 ? "k1" : "k\(i)")
            submission.earliestBeginDate = Date().addingTimeInterval(86_400)
            if i == 25 { submission.taskIdentifier = 1_000 }  // never reserved: refused alone
            let frame = try FrameEncoder.frame(try MessageCoder().encode(ClientMessage.request(id: UInt64(100 + i), .submit(submission))))
            bytes += Array(frame.readableBytesView)
        }
        try await client.sendBytes(bytes)
        var answers: [UInt64: DaemonMessage] = [:]
        while answers.count < 50 {
            let message = try await client.next()
            switch message {
            case .reply(let id, _), .failure(let id, _): answers[id] = message
            default: break
            }
        }
        var identifiers: [Int] = []
        for i in 1...50 {
            switch answers[UInt64(100 + i)] {
            case .reply(_, .submitted(let submitted))?:
                identifiers.append(submitted.task.taskIdentifier)
                #expect(submitted.existing == (i == 50))
            case .failure(_, let error)?:
                #expect(i == 25 && error.code == .badRequest, "\(i): \(error)")
            default:
                Issue.record("no answer for \(i)")
            }
        }
        #expect(identifiers == Array(1...48) + [1])
        guard case .tasks(let page) = try await client.request(.listTasks(ListTasks(sessionIdentifier: "s"))) else { throw TestFailure("no list") }
        #expect(page.tasks.count == 48)
    }
}
