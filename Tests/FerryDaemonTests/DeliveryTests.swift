@testable import FerryDaemon
import FerryCore
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// A download's `deliverTo` (checked at submission, moved there at completion, never over a
/// file), and sessions that keep no events for a later owner.
@Suite("Delivering downloads and unclaimed events")
struct DeliveryTests {
    static func attach(_ client: RawClient, _ session: String, keepsEvents: Bool?) async throws {
        _ = try await client.request(.attach(AttachSession(sessionIdentifier: session, owner: true, keepsEvents: keepsEvents)))
    }

    static func download(_ session: String, _ url: String, to target: String) -> TaskSubmission {
        var submission = TaskSubmission.download(session, url)
        submission.deliverTo = target
        return submission
    }

    @Test("a completed download is moved to its deliverTo; a taken name is never replaced: the next is 'name (1).ext'")
    func deliversWithoutReplacing() async throws {
        let daemon = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await daemon.client("ferry-cli")
        try await Self.attach(client, "ferry.cli", keepsEvents: false)
        let target = daemon.root.appendingPathComponent("out.tar.gz").path
        var placed: [String] = []
        for seed in [1, 2] as [UInt64] {
            let task = try await client.submit(Self.download("ferry.cli", server.baseURL + "/bytes/5000?seed=\(seed)", to: target))
            let events = try await client.events(untilFinished: [task.taskIdentifier])
            guard case .downloadFinished(let finished)? = events.of(task.taskIdentifier).map(\.kind).first(where: { $0.name == "downloadFinished" })
            else { throw TestFailure("no downloadFinished: \(events)") }
            placed.append(finished.location)
            #expect(try await daemon.task("ferry.cli", task.taskIdentifier).deliveredTo == finished.location)
            #expect(try TestFiles.sha256Hex(Data(contentsOf: URL(fileURLWithPath: finished.location))) == TestContent.sha256Hex(count: 5000, seed: seed))
        }
        #expect(placed == [target, daemon.root.appendingPathComponent("out (1).tar.gz").path])
        try await server.shutdown()
        await daemon.shutdown()
    }

    @Test("a deliverTo in a missing folder, or that is a folder, is refused at submission (cannotWriteToFile) and nothing is stored")
    func refusesWhatCannotBeWritten() async throws {
        let daemon = try await InProcessDaemon()
        let client = try await daemon.client("ferry-cli")
        try await Self.attach(client, "ferry.cli", keepsEvents: false)
        for target in [daemon.root.appendingPathComponent("missing/x.bin").path, daemon.root.path] {
            let error = await #expect(throws: FerryProtocolError.self) {
                try await client.submit(Self.download("ferry.cli", "http://127.0.0.1:9/x.bin", to: target))
            }
            #expect(error?.code == .cannotWriteToFile, "\(String(describing: error))")
        }
        #expect(try await daemon.store.tasks(in: "ferry.cli").isEmpty)
        await daemon.shutdown()
    }

    @Test("a session that keeps no events: once nobody owns it, ferryd acknowledges its events; a session that keeps them still has them")
    func unclaimedEventsAreAcknowledged() async throws {
        let daemon = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        for (session, keeps) in [("cli.session", false), ("script.session", true)] {
            let client = try await daemon.client("client-\(session)")
            try await Self.attach(client, session, keepsEvents: keeps ? nil : false)
            let task = try await client.submit(TaskSubmission.download(session, server.baseURL + "/bytes/1000?seed=3&stallAfter=10&stallSeconds=1"))
            client.close()  // leaves before the task ends
            try await daemon.waitUntilCompleted(session, [task.taskIdentifier])
        }
        try await poll(until: "cli.session's events to be acknowledged by ferryd", timeout: .seconds(10)) {
            try await daemon.store.undeliveredEvents(in: "cli.session").isEmpty
        }
        #expect(try await daemon.store.session("cli.session")?.keepsEvents == false)
        #expect(try await daemon.store.undeliveredEvents(in: "script.session").count == 3)  // response, downloadFinished, completed
        try await server.shutdown()
        await daemon.shutdown()
    }

    @Test("keepsEvents false is refused for an app's session: the app is launched for its events")
    func appSessionKeepsEvents() async throws {
        let app = PeerApp(bundleIdentifier: "com.example.photos", containingApp: nil)
        let daemon = try await InProcessDaemon(apps: StaticApps(app: app))
        let client = try await daemon.client("photos")
        let error = await #expect(throws: FerryProtocolError.self) { try await Self.attach(client, "com.example.photos.bg", keepsEvents: false) }
        #expect(error?.code == .badRequest)
        #expect(try await daemon.store.session("com.example.photos.bg") == nil)
        await daemon.shutdown()
    }

    @Test("numbered names beside a taken one", arguments: [
        ("/d/photo.jpg", "/d/photo (1).jpg"), ("/d/src.tar.gz", "/d/src (1).tar.gz"), ("/d/.bashrc", "/d/.bashrc (1)"),
        ("/d/README", "/d/README (1)"), ("/d/a.b.c", "/d/a.b (1).c"),
    ])
    func numberedNames(_ target: String, _ second: String) {
        #expect(Array(Delivery.names(for: target).prefix(2)) == [target, second])
    }
}

/// Events bigger than a connection's outbound bound reach a client that reads them late.
@Suite("Event backlog")
struct EventBacklogTests {
    @Test("a client that reads late gets three 4 MiB bodies (about 17 MB of events, twice the outbound bound) whole, in slices, and stays connected")
    func backlogBeyondOutboundBound() async throws {
        let ferryd = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        var tasks: [Int] = []
        for seed in 1...3 {
            let submitted = try await client.submit(TaskSubmission(
                sessionIdentifier: "s", kind: .data, request: TaskRequest(url: URL(string: server.baseURL + "/bytes/4194304?seed=\(seed)")!)))
            tasks.append(submitted.taskIdentifier)
        }
        // Not reading while the three complete: their events wait in ferryd and the socket.
        try await ferryd.waitUntilCompleted("s", tasks, timeout: .seconds(10))
        let events = try await client.events(untilFinished: Set(tasks))
        #expect(Set(events.map(\.sequence)).count == events.count, "an event came twice")
        for (index, task) in tasks.enumerated() {
            let chunks = events.of(task).compactMap { if case .data(let d) = $0.kind { d } else { nil } }
            let body = chunks.reduce(Data(), +)
            #expect(TestFiles.sha256Hex(body) == TestContent.sha256Hex(count: 4_194_304, seed: UInt64(index + 1)),
                    "task \(task): \(chunks.count) chunks, \(body.count) bytes, events \(events.of(task).map { "\($0.sequence) \($0.kind.name)" }); all: \(events.map { "\($0.sequence)/\($0.taskIdentifier ?? 0)" })")
            #expect(events.of(task).last?.kind == .completed)
        }
        #expect(events.map(\.sequence) == events.map(\.sequence).sorted())
        guard case .status = try await client.request(.status, timeout: 5) else { throw TestFailure("the connection was cut off") }
        try await server.shutdown()
        await ferryd.shutdown()
    }
}
