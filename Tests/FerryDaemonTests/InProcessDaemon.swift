// ferryd's library in this process, on a temporary socket and store, with a manual clock:
// tests of time (backoff, Retry-After, begin dates, relaunch delays) advance it instead of
// sleeping. Clients still talk to it over the real socket.
import FerryDaemon
import FerryProtocol
import FerryStore
import FerryTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

final class InProcessDaemon: Sendable {
    let root: URL
    let clock: ManualClock
    let store: FerryStore
    let daemon: Daemon
    let server: DaemonServer
    let launcher: RecordingLauncher
    let stopped = NIOLockedValueBox(false)
    /// `Daemon.run()`, which lasts until the daemon stops.
    private let running: Task<Void, any Error>
    var socketPath: String { root.appendingPathComponent("run/ferryd.sock").path }
    var dataDirectory: URL { root.appendingPathComponent("data") }

    init(apps: any PeerIdentifying = NoApps(), configure: (inout DaemonConfiguration) -> Void = { _ in }) async throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("ferryd-inproc-\(UUID().uuidString.prefix(8))")
        let data = root.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        clock = ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000))
        store = try FerryStore(path: data.appendingPathComponent("ferryd.sqlite").path)
        var configuration = DaemonConfiguration(
            socketURL: root.appendingPathComponent("run/ferryd.sock"), storeURL: data.appendingPathComponent("ferryd.sqlite"),
            dataDirectory: data)
        configure(&configuration)
        launcher = RecordingLauncher()
        daemon = try Daemon(configuration: configuration, store: store, clock: clock, apps: apps, launcher: launcher)
        server = try await DaemonServer.bind(daemon: daemon, socketURL: configuration.socketURL)
        let stopped = self.stopped
        let daemon = self.daemon
        running = Task { try await daemon.run(onStop: { stopped.withLockedValue { $0 = true } }) }
    }

    func client(_ name: String = "app") async throws -> RawClient {
        try await RawClient.connected(to: socketPath, name: name)
    }

    func shutdown() async {
        await daemon.shutdown()
        _ = await running.result
        await server.close()
        try? store.close()
        try? FileManager.default.removeItem(at: root)
    }

    func task(_ session: String, _ task: Int) async throws -> TaskRecord {
        try #require(try await store.task(session: session, task: task))
    }

    /// Waits (at most `timeout`) until every one of `tasks` of `session` is `completed` in
    /// ferryd's store.
    func waitUntilCompleted(
        _ session: String, _ tasks: [Int], timeout: Duration = .seconds(20), fileID: String = #fileID, line: Int = #line
    ) async throws {
        try await poll(until: "tasks \(tasks) of \(session) to complete in ferryd's store", timeout: timeout, fileID: fileID, line: line) {
            for task in tasks where try await self.task(session, task).state != .completed { return false }
            return true
        }
    }
}

/// Records launches; fails them while `failing` is set.
final class RecordingLauncher: AppLaunching {
    let launches = NIOLockedValueBox<[(app: String, session: String)]>([])
    let failing = NIOLockedValueBox(false)

    func launch(appBundleIdentifier: String, sessionIdentifier: String) async throws {
        launches.withLockedValue { $0.append((appBundleIdentifier, sessionIdentifier)) }
        if failing.withLockedValue({ $0 }) { throw TestFailure("launch failed (as the test asked)") }
    }

    var count: Int { launches.withLockedValue { $0.count } }
}

/// Every peer is the same app (or extension) with the same groups.
struct StaticApps: PeerIdentifying {
    var app: PeerApp
    func identify(pid: Int32) -> PeerApp { app }
}

extension TaskInfo {
    var reasonKind: WaitingReason.Kind? { waitingReason?.kind }
}

extension RawClient {
    func task(_ session: String, _ id: Int) async throws -> TaskInfo {
        guard case .tasks(let page) = try await request(.listTasks(ListTasks(sessionIdentifier: session))),
            let task = page.tasks.first(where: { $0.taskIdentifier == id })
        else { throw TestFailure("no task \(id)") }
        return task
    }
}
