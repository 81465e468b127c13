import FerryCore
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// ferryd in a network namespace of its own, its link taken down and up and its default route
/// removed (``NetworkLab``): tasks wait for the network without using attempts, say why, and
/// start within a second of it coming back, with netlink and with polling.
@Suite("Network awareness", .serialized)
struct NetworkTests {
    static let fileSize = 256 << 10

    /// A lab with its web server serving `file.bin`, and a ferryd in its client namespace.
    static func setUp(monitor: String? = nil, environment: [String: String] = [:]) async throws -> (NetworkLab, FerrydProcess) {
        let lab = try NetworkLab.make()
        do {
            try Data(TestContent.bytes(count: fileSize, seed: 7)).write(to: lab.www.appendingPathComponent("file.bin"))
            try await lab.startServer()
            let ferryd = try FerrydProcess()
            ferryd.wrapper = lab.inClient([])
            ferryd.extraEnvironment = environment.merging(monitor.map { ["FERRYD_NETWORK_MONITOR": $0] } ?? [:]) { $1 }
            try await ferryd.start()
            return (lab, ferryd)
        } catch {
            lab.remove()
            throw error
        }
    }

    static func attach(_ session: String, _ access: NetworkAccess, on client: RawClient) async throws {
        _ = try await client.request(.attach(AttachSession(sessionIdentifier: session, networkAccess: access)))
    }

    static func task(_ session: String, _ task: Int, on client: RawClient) async throws -> TaskInfo {
        guard case .tasks(let page) = try await client.request(.listTasks(ListTasks(sessionIdentifier: session))),
            let info = page.tasks.first(where: { $0.taskIdentifier == task })
        else { throw TestFailure("task \(task) of \(session) is not listed") }
        return info
    }

    /// Changes the network with `change`, then waits (≤ 10 s) until ferryd's status shows
    /// `hasDefaultRoute` as `online`: ferryd has seen the change.
    static func change(_ ferryd: FerrydProcess, toOnline online: Bool, _ change: () throws -> Void) async throws {
        try change()
        let client = try await RawClient.connected(to: ferryd.socketPath, name: "status")
        defer { client.close() }
        var last: NetworkStatus?
        try await poll(until: "ferryd to see the network \(online ? "online" : "offline")", timeout: .seconds(10), every: .milliseconds(20),
                       observed: "\(String(describing: last))") {
            guard case .status(let status) = try await client.request(.status) else { return false }
            last = status.network
            return status.network?.hasDefaultRoute == online
        }
    }

    /// Waits (≤ 10 s) until ferryd says the task waits for `kind`; its reason.
    static func waits(_ session: String, _ task: Int, for kind: WaitingReason.Kind, on client: RawClient, ferryd: FerrydProcess) async throws -> WaitingReason {
        var last: TaskInfo?
        return try await eventually("task \(task) to wait for \(kind)", timeout: .seconds(10), every: .milliseconds(50),
                                    observed: "\(String(describing: last)); ferryd's log:\n\(ferryd.log.suffix(1500))") {
            last = try await Self.task(session, task, on: client)
            return last?.waitingReason.flatMap { $0.kind == kind ? $0 : nil }
        }
    }

    /// Changes the network with `change`, then measures how long until the web server logs a
    /// request for `path` (≤ 10 s).
    static func secondsUntilRequested(_ path: String, lab: NetworkLab, after change: () throws -> Void) async throws -> Double {
        let before = lab.requests.filter { $0.contains("GET \(path) ") }.count
        try change()
        let start = ContinuousClock.now
        try await poll(until: "the web server to be asked for \(path)", timeout: .seconds(10), every: .milliseconds(10),
                       observed: "its log: \(lab.requests.suffix(3))") {
            lab.requests.filter { $0.contains("GET \(path) ") }.count > before
        }
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Puts 1 MiB as `slow.bin` (content of `seed`) and slows the server to 256 KiB/s (4 s for
    /// the file), so that a download is still under way when the test changes the network.
    static func serveSlowly(_ lab: NetworkLab, seed: UInt64) throws -> Int {
        let size = 1 << 20
        try Data(TestContent.bytes(count: size, seed: seed)).write(to: lab.www.appendingPathComponent("slow.bin"))
        try lab.limitServerRate(bytesPerSecond: 256 << 10)
        return size
    }

    /// Waits (≤ 10 s) until the web server answered the download of `slow.bin`, then half a
    /// second more: its bytes are flowing.
    static func underWay(_ lab: NetworkLab) async throws {
        try await poll(until: "the web server to answer the download", timeout: .seconds(10), every: .milliseconds(20),
                       observed: "its log: \(lab.requests.suffix(3))") {
            lab.requests.contains { $0.contains("GET /slow.bin ") }
        }
        try await Task.sleep(for: .milliseconds(500))
    }

    func finishedFile(_ events: [Event], task: Int) throws -> URL {
        let location = events.of(task).compactMap { if case .downloadFinished(let f) = $0.kind { f.location } else { nil } }.first
        return URL(fileURLWithPath: try #require(location, "task \(task) has no downloadFinished: \(events.of(task).map(\.kind.name))"))
    }

    @Test("with the link down a download waits (noNetwork), the owner hears it once, and it starts within a second of the link coming back")
    func linkDownAndUp() async throws {
        let (lab, ferryd) = try await Self.setUp()
        defer { ferryd.cleanUp(); lab.remove() }
        try await Self.change(ferryd, toOnline: false) { try lab.setLink(up: false) }
        let client = try await RawClient.connected(to: ferryd.socketPath)
        try await Self.attach("net", NetworkAccess(waitsForConnectivity: true), on: client)
        let task = try await client.submit(.download("net", lab.url("/file.bin"))).taskIdentifier
        let push = try await client.nextPush(timeout: 10)
        guard case .waitingForConnectivity(let waiting) = push else { throw TestFailure("expected waitingForConnectivity, got \(push)") }
        #expect(waiting.taskIdentifier == task && waiting.reason.kind == .noNetwork)
        let reason = try await Self.waits("net", task, for: .noNetwork, on: client, ferryd: ferryd)
        #expect(reason.message.contains("no network"), "\(reason.message)")
        #expect(try await Self.task("net", task, on: client).state == .waiting)
        #expect(lab.requests.isEmpty, "nothing was sent while offline")

        // A second pass of the scheduler (a wake-up) must not tell the owner again.
        _ = try await client.submit(.download("net", lab.url("/file.bin?second")))
        let seconds = try await Self.secondsUntilRequested("/file.bin", lab: lab) { try lab.setLink(up: true) }
        #expect(seconds < 1.0, "the download started \(seconds) s after the link came back")
        let pushes = try await client.pushes(timeout: 30) { $0.event.map { $0.taskIdentifier == task && $0.kind == .completed } ?? false }
        let told = pushes.filter { if case .waitingForConnectivity(let w) = $0, w.taskIdentifier == task { true } else { false } }
        #expect(told.isEmpty, "told again: \(told)")
        let events = pushes.compactMap(\.event)
        #expect(events.of(task).last?.kind == .completed)
        #expect(try TestFiles.sha256Hex(ofFile: finishedFile(events, task: task)) == TestContent.sha256Hex(count: Self.fileSize, seed: 7))
        let finished = try await Self.task("net", task, on: client)
        #expect(finished.attemptCount == 1, "waiting used no attempt: \(finished); ferryd's log:\n\(ferryd.log.suffix(3000))")
        #expect(!events.contains { if case .failed = $0.kind { true } else { false } })
        #expect(ferryd.log.contains("network changed"))
    }

    @Test("a download whose link goes down mid-transfer waits again within 2 s (noNetwork), not until its request time-out, and finishes whole once the link is back")
    func linkDownMidTransfer() async throws {
        let (lab, ferryd) = try await Self.setUp()
        defer { ferryd.cleanUp(); lab.remove() }
        let size = try Self.serveSlowly(lab, seed: 11)
        let client = try await RawClient.connected(to: ferryd.socketPath)
        try await Self.attach("mid", NetworkAccess(waitsForConnectivity: true), on: client)
        let task = try await client.submit(.download("mid", lab.url("/slow.bin"))).taskIdentifier
        try await Self.underWay(lab)
        #expect(try await Self.task("mid", task, on: client).state == .running)

        let down = ContinuousClock.now
        try lab.setLink(up: false)
        let reason = try await Self.waits("mid", task, for: .noNetwork, on: client, ferryd: ferryd)
        let waited = ContinuousClock.now - down
        #expect(waited < .seconds(2), "the task waited again \(waited) after its link went down")
        #expect(reason.message.contains("no network"), "\(reason.message)")
        #expect(try await Self.task("mid", task, on: client).state == .waiting)
        #expect(ferryd.log.contains("route lost: interrupting transfers"), "ferryd's log:\n\(ferryd.log.suffix(2000))")

        try lab.setLink(up: true)
        let pushes = try await client.pushes(timeout: 60) { message in
            guard let event = message.event, event.taskIdentifier == task else { return false }
            if case .failed = event.kind { return true }
            return event.kind == .completed
        }
        let told = pushes.filter { if case .waitingForConnectivity(let w) = $0, w.taskIdentifier == task { true } else { false } }
        #expect(told.count == 1, "the owner hears once that the task waits: \(told)")
        let events = pushes.compactMap(\.event)
        #expect(events.of(task).last?.kind == .completed, "\(events.of(task).map(\.kind.name)); ferryd's log:\n\(ferryd.log.suffix(3000))")
        #expect(try TestFiles.sha256Hex(ofFile: finishedFile(events, task: task)) == TestContent.sha256Hex(count: size, seed: 11))
        let asked = lab.requests.filter { $0.contains("GET /slow.bin ") }
        #expect(asked.count == 2, "asked again once the link was back: \(asked)")
        let resumedAt = asked.last.flatMap { $0.range(of: "range=bytes=") }.map { asked.last![$0.upperBound...].prefix { $0.isNumber } }
        #expect(resumedAt.flatMap { Int($0) }.map { $0 > 0 } == true, "the second request asks for the rest (206), not the whole: \(asked)")
        #expect(try await Self.task("mid", task, on: client).attemptCount == 1, "the network's interruption used no attempt")
    }

    @Test("a link that drops for a moment (shorter than the grace) interrupts nothing: the download goes on over its connection")
    func briefDropKeepsTheTransfer() async throws {
        let (lab, ferryd) = try await Self.setUp()
        defer { ferryd.cleanUp(); lab.remove() }
        let size = try Self.serveSlowly(lab, seed: 12)
        let client = try await ferryd.owner(of: "brief")
        let task = try await client.submit(.download("brief", lab.url("/slow.bin"))).taskIdentifier
        try await Self.underWay(lab)
        try lab.setLink(up: false)
        try await Task.sleep(for: .milliseconds(300))  // ferryd reads it 50 ms after the change
        try lab.setLink(up: true)
        let events = try await client.events(untilFinished: [task], timeout: 60)
        #expect(events.of(task).last?.kind == .completed, "\(events.of(task).map(\.kind.name))")
        #expect(try TestFiles.sha256Hex(ofFile: finishedFile(events, task: task)) == TestContent.sha256Hex(count: size, seed: 12))
        #expect(lab.requests.filter { $0.contains("GET /slow.bin ") }.count == 1, "one request: \(lab.requests)")
        #expect(!ferryd.log.contains("route lost"), "ferryd's log:\n\(ferryd.log.suffix(2000))")
        #expect(ferryd.log.components(separatedBy: "network changed").count > 2, "ferryd saw the link go and come back")
    }

    @Test("without a default route a host behind it waits while one on the link is fetched; restoring the route starts it within a second")
    func defaultRouteRemoved() async throws {
        let (lab, ferryd) = try await Self.setUp()
        defer { ferryd.cleanUp(); lab.remove() }
        try await Self.change(ferryd, toOnline: false) { try lab.setDefaultRoute(present: false) }
        let client = try await ferryd.owner(of: "route")
        let far = try await client.submit(.download("route", lab.url("/file.bin"))).taskIdentifier
        let near = try await client.submit(.download("route", lab.url("/file.bin?near", host: NetworkLab.nearHost))).taskIdentifier
        let nearEvents = try await client.events(untilFinished: [near], timeout: 30)
        #expect(nearEvents.of(near).last?.kind == .completed, "the host on the link needs no default route")
        _ = try await Self.waits("route", far, for: .noNetwork, on: client, ferryd: ferryd)
        let seconds = try await Self.secondsUntilRequested("/file.bin", lab: lab) { try lab.setDefaultRoute(present: true) }
        #expect(seconds < 1.0, "the download started \(seconds) s after the default route came back")
        let events = try await client.events(untilFinished: [far], timeout: 30)
        #expect(events.of(far).last?.kind == .completed)
    }

    @Test("polling mode (/proc every 0.2 s, no netlink) also starts a waiting download within a second of the link coming back")
    func pollingMode() async throws {
        let (lab, ferryd) = try await Self.setUp(monitor: "poll:0.2")
        defer { ferryd.cleanUp(); lab.remove() }
        try await Self.change(ferryd, toOnline: false) { try lab.setLink(up: false) }
        let client = try await ferryd.owner(of: "poll")
        let task = try await client.submit(.download("poll", lab.url("/file.bin"))).taskIdentifier
        _ = try await Self.waits("poll", task, for: .noNetwork, on: client, ferryd: ferryd)
        let seconds = try await Self.secondsUntilRequested("/file.bin", lab: lab) { try lab.setLink(up: true) }
        #expect(seconds < 1.0, "the download started \(seconds) s after the link came back")
        let events = try await client.events(untilFinished: [task], timeout: 30)
        #expect(events.of(task).last?.kind == .completed)
        guard case .status(let status) = try await client.request(.status) else { throw TestFailure("no status") }
        #expect(status.network?.source == "proc", "polling reads /proc: \(String(describing: status.network))")
    }

    @Test("a backoff after an unreachable server (60 s) is cut short when the network comes back")
    func backoffCutShort() async throws {
        let (lab, ferryd) = try await Self.setUp()
        defer { ferryd.cleanUp(); lab.remove() }
        let client = try await ferryd.owner(of: "back")
        var submission = TaskSubmission.download("back", lab.url("/missing-server.bin", host: "10.200.0.3"))
        submission.options.retryPolicy = RetryPolicy(maximumAttempts: 10, initialDelay: .seconds(60), maximumDelay: .seconds(60))
        let task = try await client.submit(submission).taskIdentifier
        // 10.200.0.3 is on the link but nobody has it: the attempt fails (no ARP answer, then
        // host unreachable), and the task backs off for a minute.
        let reason = try await Self.waits("back", task, for: .backingOff, on: client, ferryd: ferryd)
        #expect((reason.until?.timeIntervalSinceNow ?? 0) > 20, "backing off until \(String(describing: reason.until))")
        try await Self.change(ferryd, toOnline: false) { try lab.setLink(up: false) }
        try lab.setLink(up: true)
        let attempt = try await eventually("a second attempt soon after the link came back", timeout: .seconds(3), every: .milliseconds(50),
                                           observed: "ferryd's log:\n\(ferryd.log.suffix(1500))") {
            let info = try await Self.task("back", task, on: client)
            return info.attemptCount >= 2 ? info.attemptCount : nil
        }
        #expect(attempt >= 2)
        #expect(ferryd.log.contains("network is back: retrying now"))
    }

    @Test("a session that does not allow expensive links waits on one (expensiveNetwork) while another session's task runs; allowing it starts it")
    func expensiveLink() async throws {
        let (lab, ferryd) = try await Self.setUp(environment: ["FERRYD_EXPENSIVE_INTERFACES": "fc*"])
        defer { ferryd.cleanUp(); lab.remove() }
        let frugal = try await RawClient.connected(to: ferryd.socketPath, name: "frugal")
        try await Self.attach("frugal", NetworkAccess(allowsExpensiveNetworkAccess: false), on: frugal)
        let held = try await frugal.submit(.download("frugal", lab.url("/file.bin?frugal"))).taskIdentifier
        let reason = try await Self.waits("frugal", held, for: .expensiveNetwork, on: frugal, ferryd: ferryd)
        #expect(reason.message.contains(lab.clientLink) && reason.message.contains("allowsExpensiveNetworkAccess"), "\(reason.message)")
        let other = try await ferryd.owner(of: "other")
        let runs = try await other.submit(.download("other", lab.url("/file.bin?other"))).taskIdentifier
        #expect(try await other.events(untilFinished: [runs], timeout: 30).of(runs).last?.kind == .completed)
        #expect(!lab.requests.contains { $0.contains("frugal") })
        frugal.close()
        let again = try await RawClient.connected(to: ferryd.socketPath, name: "frugal")
        _ = try await eventually("the session to be free again", timeout: .seconds(5), every: .milliseconds(50)) {
            do {
                try await Self.attach("frugal", NetworkAccess(allowsExpensiveNetworkAccess: true), on: again)
                return true
            } catch let error as FerryProtocolError where error.code == .backgroundSessionInUseByAnotherProcess {
                return nil
            }
        }
        #expect(try await again.events(untilFinished: [held], timeout: 30).of(held).last?.kind == .completed)
    }

    @Test("a discretionary task waits on battery (the power-supply class says so) and starts on mains power")
    func discretionaryWaitsForMains() async throws {
        let power = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-power-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: power) }
        for (supply, type) in [("BAT0", "Battery"), ("AC", "Mains")] {
            try FileManager.default.createDirectory(at: power.appendingPathComponent(supply), withIntermediateDirectories: true)
            try "\(type)\n".write(to: power.appendingPathComponent("\(supply)/type"), atomically: true, encoding: .utf8)
        }
        try "0\n".write(to: power.appendingPathComponent("AC/online"), atomically: true, encoding: .utf8)
        let (lab, ferryd) = try await Self.setUp(monitor: "poll:0.2", environment: ["FERRYD_POWER_SUPPLY_DIR": power.path])
        defer { ferryd.cleanUp(); lab.remove() }
        let client = try await RawClient.connected(to: ferryd.socketPath)
        try await Self.attach("later", NetworkAccess(isDiscretionary: true), on: client)
        let task = try await client.submit(.download("later", lab.url("/file.bin"))).taskIdentifier
        let reason = try await Self.waits("later", task, for: .discretionary, on: client, ferryd: ferryd)
        #expect(reason.message.contains("mains power"), "\(reason.message)")
        try "1\n".write(to: power.appendingPathComponent("AC/online"), atomically: true, encoding: .utf8)
        #expect(try await client.events(untilFinished: [task], timeout: 30).of(task).last?.kind == .completed)
    }

    @Test("more than a page of tasks held by the network does not hide a task after them that may run")
    func heldPageDoesNotStarve() async throws {
        let (lab, ferryd) = try await Self.setUp(environment: ["FERRYD_EXPENSIVE_INTERFACES": "fc*"])
        defer { ferryd.cleanUp(); lab.remove() }
        let frugal = try await RawClient.connected(to: ferryd.socketPath, name: "frugal")
        try await Self.attach("frugal", NetworkAccess(allowsExpensiveNetworkAccess: false), on: frugal)
        // Older and of higher priority than the free task: all of them come first in the scheduler's pages.
        for index in 0..<1_050 {
            var submission = TaskSubmission.download("frugal", lab.url("/file.bin?held=\(index)"))
            submission.options.priority = 1
            _ = try await frugal.submit(submission)
        }
        let other = try await ferryd.owner(of: "free")
        let free = try await other.submit(.download("free", lab.url("/file.bin?free"))).taskIdentifier
        #expect(try await other.events(untilFinished: [free], timeout: 30).of(free).last?.kind == .completed)
        #expect(!lab.requests.contains { $0.contains("held=") }, "the held tasks stayed held")
    }
}
