import FerryDaemon
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// Who may submit, suspend, resume or cancel a task of a session another connection owns: a
/// watcher of a session of no app (the CLI's own: `ferry download` or `ferry pause` from a
/// second shell), never one of an app's session.
@Suite("Task control by a watcher")
struct WatcherControlTests {
    static func waitingTask(on daemon: InProcessDaemon, session: String) async throws -> (owner: RawClient, task: Int) {
        let owner = try await daemon.client("owner")
        try await owner.request(.attach(session))
        return (owner, try await owner.submit(neverStarting(session)).taskIdentifier)
    }

    /// A download that waits for a begin date years away: nothing runs.
    static func neverStarting(_ session: String) -> TaskSubmission {
        var submission = TaskSubmission.download(session, "http://127.0.0.1:9/never")
        submission.earliestBeginDate = Date(timeIntervalSince1970: 1_900_000_000)
        return submission
    }

    @Test("in a session of no app, a watcher suspends, resumes and cancels a task the owner's connection holds")
    func sessionOfNoApp() async throws {
        let daemon = try await InProcessDaemon()
        let (owner, task) = try await Self.waitingTask(on: daemon, session: "ferry.cli")
        let watcher = try await daemon.client("ferry")
        try await watcher.request(.attach("ferry.cli", owner: false))
        let reference = TaskReference(sessionIdentifier: "ferry.cli", taskIdentifier: task)
        guard case .task(let suspended) = try await watcher.request(.suspend(reference)) else { throw TestFailure("no task") }
        #expect(suspended.state == .suspended)
        guard case .task(let resumed) = try await watcher.request(.resume(reference)) else { throw TestFailure("no task") }
        #expect(resumed.state == .waiting)
        guard case .task(let cancelled) = try await watcher.request(.cancel(reference)) else { throw TestFailure("no task") }
        #expect(cancelled.state == .cancelled)
        // The owner hears of it: the task's failure event comes to it.
        let events = try await owner.events(untilFinished: [task])
        guard case .failed(let failure) = events.last?.kind else { throw TestFailure("no failure event: \(events)") }
        #expect(failure.code == "cancelled")
        await daemon.shutdown()
    }

    @Test("in a session of no app, a watcher submits a task while another connection owns the session (a second `ferry download`)")
    func watcherSubmits() async throws {
        let daemon = try await InProcessDaemon()
        let (owner, first) = try await Self.waitingTask(on: daemon, session: "ferry.cli")
        let watcher = try await daemon.client("ferry")
        try await watcher.request(.attach("ferry.cli", owner: false))
        let second = try await watcher.submit(Self.neverStarting("ferry.cli"))
        #expect(second.taskIdentifier == first + 1)
        #expect(try await daemon.task("ferry.cli", second.taskIdentifier).state == .waiting)
        owner.close()
        await daemon.shutdown()
    }

    @Test("in an app's session a watcher may not change a task (notOwner), and nothing changes")
    func appSession() async throws {
        let app = PeerApp(bundleIdentifier: "com.example.photos", containingApp: nil)
        let daemon = try await InProcessDaemon(apps: StaticApps(app: app))
        let (_, task) = try await Self.waitingTask(on: daemon, session: "com.example.photos.bg")
        let watcher = try await daemon.client("ferry")
        try await watcher.request(.attach("com.example.photos.bg", owner: false))
        let reference = TaskReference(sessionIdentifier: "com.example.photos.bg", taskIdentifier: task)
        for request: FerryProtocol.Request in [.suspend(reference), .cancel(reference), .submit(Self.neverStarting("com.example.photos.bg"))] {
            let error = await #expect(throws: FerryProtocolError.self) { try await watcher.request(request) }
            #expect(error?.code == .notOwner)
        }
        #expect(try await daemon.task("com.example.photos.bg", task).state == .waiting)
        #expect(try await daemon.store.tasks(in: "com.example.photos.bg").count == 1)
        await daemon.shutdown()
    }

    @Test("a connection attached to nothing may not change a task of a session of no app")
    func notAttached() async throws {
        let daemon = try await InProcessDaemon()
        let (_, task) = try await Self.waitingTask(on: daemon, session: "ferry.cli")
        let stranger = try await daemon.client("stranger")
        let error = await #expect(throws: FerryProtocolError.self) {
            try await stranger.request(.cancel(TaskReference(sessionIdentifier: "ferry.cli", taskIdentifier: task)))
        }
        #expect(error?.code == .notOwner)
        await daemon.shutdown()
    }
}
