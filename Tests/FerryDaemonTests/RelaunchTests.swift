import FerryDaemon
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// Events with nobody to tell launch the containing app, with backoff (manual clock).
@Suite("Relaunch and app groups (manual clock)", .serialized)
struct RelaunchTests {
    static let shareExtension = PeerApp(
        bundleIdentifier: "com.example.app.share", containingApp: "com.example.app", appGroups: ["group.example"], isExtension: true,
        backgroundSessionIdentifier: "bg")

    @Test("an extension submits and leaves; the containing app is launched (never the extension), again with backoff while it does not come, and gets the events once it attaches")
    func relaunchContainingApp() async throws {
        let ferryd = try await InProcessDaemon(apps: StaticApps(app: Self.shareExtension)) { $0.launchConnectTimeout = 60 }
        let server = try await TestHTTPServer.start()
        let body = try makeFile(ferryd.root, "photo.jpg", count: 50_000, seed: 4)
        let share = try await ferryd.client("com.example.app.share")
        try await share.request(.attach("bg", group: "group.example"))
        let task = try await share.submit(.upload("bg", server.baseURL + "/upload", file: body, method: "POST", key: "share-001"))
        share.close()

        try await poll(until: "the app is launched for the completed upload") { ferryd.launcher.count == 1 }
        #expect(ferryd.launcher.launches.withLockedValue { $0.map(\.app) } == ["com.example.app"])
        #expect(ferryd.launcher.launches.withLockedValue { $0.map(\.session) } == ["bg"])

        // It does not come: launched again after 60 s, not before, and not in a loop. The next
        // launch is timed for 60 s after the first, so moving the clock 59 s wakes nobody.
        let secondLaunch = ferryd.clock.now.addingTimeInterval(60)
        try await poll(until: "ferryd to time the next launch for the connect time-out", observed: "next wake-up \(String(describing: ferryd.clock.nextDeadline))") {
            ferryd.clock.nextDeadline == secondLaunch
        }
        ferryd.clock.advance(by: 59)
        #expect(ferryd.clock.nextDeadline == secondLaunch, "something woke before the connect time-out")
        #expect(ferryd.launcher.count == 1)
        ferryd.clock.advance(by: 1)
        try await poll(until: "a second launch") { ferryd.launcher.count == 2 }
        try await Task.sleep(for: .milliseconds(200))
        #expect(ferryd.launcher.count == 2)

        // The app attaches: the stored events, in order, then eventsFinished.
        let app = try await ferryd.client("com.example.app")
        guard case .attached(let attached) = try await app.request(.attach("bg", group: "group.example")) else { throw TestFailure("no attach") }
        #expect(attached.tasks.first?.state == .completed)
        let messages = try await app.pushes { $0.isEventsFinished }
        let events = messages.compactMap(\.event)
        #expect(events.map(\.kind.name) == ["response", "data", "completed"])
        #expect(events.allSatisfy { $0.taskIdentifier == task.taskIdentifier })
        try await app.request(.acknowledge(Acknowledge(sessionIdentifier: "bg", upToSequence: events.last!.sequence)))
        ferryd.clock.advance(by: 3600)
        try await Task.sleep(for: .milliseconds(200))
        #expect(ferryd.launcher.count == 2)
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a launch that fails is retried after 10 s, 20 s, 40 s… (or the connect time-out, if longer), never in a loop")
    func failingLaunchBacksOff() async throws {
        let ferryd = try await InProcessDaemon(apps: StaticApps(app: Self.shareExtension)) { $0.launchConnectTimeout = 5 }
        ferryd.launcher.failing.withLockedValue { $0 = true }
        let server = try await TestHTTPServer.start()
        let share = try await ferryd.client()
        try await share.request(.attach("bg", group: "group.example"))
        _ = try await share.submit(.download("bg", server.baseURL + "/bytes/100"))
        share.close()
        try await poll(until: "first launch") { ferryd.launcher.count == 1 }
        for (step, expected) in [(10.0, 2), (20.0, 3), (40.0, 4)] {
            // The next launch is timed for `step` after this one: 0.5 s before it, nobody wakes.
            let next = ferryd.clock.now.addingTimeInterval(step)
            try await poll(until: "ferryd to time launch \(expected) for \(step) s later", observed: "next wake-up \(String(describing: ferryd.clock.nextDeadline))") {
                ferryd.clock.nextDeadline == next
            }
            ferryd.clock.advance(by: step - 0.5)
            #expect(ferryd.clock.nextDeadline == next, "something woke before \(step) s")
            #expect(ferryd.launcher.count == expected - 1, "launched before \(step) s")
            ferryd.clock.advance(by: 0.5)
            try await poll(until: "launch \(expected)") { ferryd.launcher.count == expected }
        }
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a peer outside the app group is refused with notInAppGroup; an unregistered process may not use a group")
    func appGroups() async throws {
        let ferryd = try await InProcessDaemon(apps: StaticApps(app: Self.shareExtension))
        let client = try await ferryd.client()
        let error = await #expect(throws: FerryProtocolError.self) { try await client.request(.attach("x", group: "group.other")) }
        #expect(error?.code == .notInAppGroup)
        await ferryd.shutdown()

        let plain = try await InProcessDaemon()
        let cli = try await plain.client()
        let refused = await #expect(throws: FerryProtocolError.self) { try await cli.request(.attach("x", group: "group.example")) }
        #expect(refused?.code == .notInAppGroup)
        let unknown = await #expect(throws: FerryProtocolError.self) { try await cli.request(.attach("x", owner: false)) }
        #expect(unknown?.code == .unknownSession)  // watching creates no session
        guard case .attached(let own) = try await cli.request(.attach("x")) else { throw TestFailure("no attach") }
        #expect(own.owner)
        await plain.shutdown()
    }

    @Test("an extension owns only the session its manifest names: another is refused with undeclaredSession; it may watch; its app owns any")
    func oneSessionPerExtension() async throws {
        let ferryd = try await InProcessDaemon(apps: StaticApps(app: Self.shareExtension))
        let share = try await ferryd.client()
        let refused = await #expect(throws: FerryProtocolError.self) { try await share.request(.attach("other", group: "group.example")) }
        #expect(refused?.code == .undeclaredSession && refused?.message.contains("bg") == true, "\(String(describing: refused))")
        guard case .attached(let own) = try await share.request(.attach("bg", group: "group.example")) else { throw TestFailure("no attach") }
        #expect(own.owner)
        await ferryd.shutdown()

        var undeclared = Self.shareExtension
        undeclared.backgroundSessionIdentifier = nil
        let strict = try await InProcessDaemon(apps: StaticApps(app: undeclared))
        let client = try await strict.client()
        let none = await #expect(throws: FerryProtocolError.self) { try await client.request(.attach("bg", group: "group.example")) }
        #expect(none?.code == .undeclaredSession && none?.message.contains("backgroundSessionIdentifier") == true, "\(String(describing: none))")
        await strict.shutdown()

        let app = PeerApp(bundleIdentifier: "com.example.app", containingApp: "com.example.app", appGroups: ["group.example"])
        let appDaemon = try await InProcessDaemon(apps: StaticApps(app: app))
        let appClient = try await appDaemon.client()
        for session in ["bg", "other"] {
            guard case .attached(let owned) = try await appClient.request(.attach(session, group: "group.example")) else { throw TestFailure("no attach") }
            #expect(owned.owner, "the app owns \(session)")
        }
        await appDaemon.shutdown()
    }

    @Test("status counts what ferryd holds; stop answers, says goodbye and calls the stop handler")
    func statusAndStop() async throws {
        let ferryd = try await InProcessDaemon()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        var later = TaskSubmission.download("s", "http://127.0.0.1:9/never")
        later.earliestBeginDate = ferryd.clock.now.addingTimeInterval(600)
        _ = try await client.submit(later)
        let other = try await ferryd.client("cli")
        guard case .status(let status) = try await other.request(.status) else { throw TestFailure("no status") }
        #expect(status.pid == getpid())
        #expect(status.connectionCount == 2 && status.sessionCount == 1 && status.ownedSessionCount == 1)
        #expect(status.waitingTaskCount == 1 && status.runningTaskCount == 0)
        #expect(status.socketPath == ferryd.socketPath)
        guard case .stopping = try await other.request(.stop) else { throw TestFailure("no stopping") }
        let (closed, messages) = try await client.waitForClose()
        #expect(closed)
        #expect(messages.contains { if case .goodbye = $0 { true } else { false } })
        try await poll(until: "the stop handler ran") { ferryd.stopped.withLockedValue { $0 } }
        await ferryd.shutdown()
    }
}
