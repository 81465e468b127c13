import FerryApps
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// The platform's share-extension story against a real ferryd with installed app manifests:
/// an extension process submits an upload and exits; ferryd launches the containing app,
/// which gets the completion with the server's response body, once.
@Suite("App launch (real process, app manifests)", .serialized)
struct AppLaunchTests {
    /// A tiny protocol client in Python, so that the "app" and the "extension" are separate
    /// programs that the manifests name (ferryd identifies them by `/proc/PID`).
    static let clientLibrary = #"""
        import json, os, socket, struct, sys
        def connect():
            s = socket.socket(socket.AF_UNIX)
            s.connect(os.environ["FERRY_RUNTIME_DIR"] + "/ferryd.sock")
            return s
        def send(s, message):
            data = json.dumps(message).encode()
            s.sendall(struct.pack(">I", len(data)) + data)
        def receive(s):
            head = b""
            while len(head) < 4:
                chunk = s.recv(4 - len(head))
                if not chunk: raise EOFError()
                head += chunk
            n = struct.unpack(">I", head)[0]; body = b""
            while len(body) < n:
                chunk = s.recv(n - len(body))
                if not chunk: raise EOFError()
                body += chunk
            return json.loads(body)
        def hello(s, name):
            send(s, {"type": "hello", "protocolVersion": 1, "clientName": name, "pid": os.getpid()})
            assert receive(s)["type"] == "welcome"
        def request(s, rid, req):
            send(s, {"type": "request", "requestID": rid, "request": req})
            while True:
                m = receive(s)
                if m.get("requestID") == rid: return m
        def take_events(s, rid, session, out):
            # Owns the session, records its events up to eventsFinished in `out`, acknowledges them.
            a = request(s, rid, {"type": "attach", "sessionIdentifier": session, "sharedContainerIdentifier": "group.example", "owner": True})
            assert a["type"] == "reply", a
            events = []
            while True:
                m = receive(s)
                if m["type"] == "event": events.append(m)
                if m["type"] == "eventsFinished": break
            with open(out, "a") as f:
                for e in events: f.write(json.dumps(e) + "\n")
            request(s, rid + 1, {"type": "acknowledge", "sessionIdentifier": session, "upToSequence": events[-1]["sequence"]})
        """#

    static let extensionScript = #"""
        #!/usr/bin/python3
        import sys; sys.path.insert(0, sys.argv[1])
        from ferryclient import *
        s = connect(); hello(s, "com.example.app.share")
        attach = {"type": "attach", "sessionIdentifier": "com.example.app.bg", "sharedContainerIdentifier": "group.example", "owner": True}
        if len(sys.argv) > 4: attach["sendsLaunchEvents"] = False
        a = request(s, 1, attach)
        assert a["type"] == "reply", a
        r = request(s, 2, {"type": "submit", "sessionIdentifier": "com.example.app.bg", "kind": "upload", "priority": 0.5,
                           "request": {"url": sys.argv[3], "method": "POST", "headers": [["Content-Type", "image/jpeg"]]},
                           "bodyFile": sys.argv[2], "idempotencyKey": "share-001"})
        assert r["type"] == "reply", r
        """#

    static let appScript = #"""
        #!/usr/bin/python3
        import sys, json; sys.path.insert(0, sys.argv[1])
        from ferryclient import *
        session, out = sys.argv[2], sys.argv[3]
        s = connect(); hello(s, "com.example.app")
        take_events(s, 1, session, out)
        """#

    /// The app already running, with a session of its own, asking to be told of others' events.
    static let runningAppScript = #"""
        #!/usr/bin/python3
        import sys, json; sys.path.insert(0, sys.argv[1])
        from ferryclient import *
        out, ready = sys.argv[2], sys.argv[3]
        s = connect()
        send(s, {"type": "hello", "protocolVersion": 1, "clientName": "com.example.app", "pid": os.getpid(), "handlesEventsForOtherSessions": True})
        assert receive(s)["type"] == "welcome"
        a = request(s, 1, {"type": "attach", "sessionIdentifier": "com.example.app.main", "sharedContainerIdentifier": "group.example", "owner": True})
        assert a["type"] == "reply", a
        open(ready, "w").close()
        while True:
            m = receive(s)
            if m["type"] == "eventsWaiting": break
        with open(out, "a") as f: f.write(json.dumps(m) + "\n")
        take_events(s, 2, m["sessionIdentifier"], out)
        """#

    /// Writes the client library and the programs (name → script text) into `<root>/apps`, and
    /// installs the example app's manifest: its `launch` runs `app.py` with `arguments` after
    /// the folder and the session; the share extension is `share-extension.py`. The folder.
    static func installPrograms(_ ferryd: FerrydProcess, _ programs: [String: String], launchArguments: [String]) throws -> URL {
        let folder = ferryd.root.appendingPathComponent("apps")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(Self.clientLibrary.utf8).write(to: folder.appendingPathComponent("ferryclient.py"))
        for (name, text) in programs {
            let path = folder.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o755)
        }
        let executables = programs.keys.filter { $0 != "share-extension.py" }.sorted().map { folder.appendingPathComponent($0).path }
        let appPath = folder.appendingPathComponent("app.py").path
        let paths = FerryPaths(dataDirectory: ferryd.dataDirectory, runtimeDirectory: ferryd.runtimeDirectory)
        try AppRegistry(paths: paths).install(AppManifest(
            bundleIdentifier: "com.example.app", name: "Example", executables: executables,
            launch: [appPath, folder.path, "{session}"] + launchArguments, appGroups: ["group.example"],
            extensions: [ExtensionManifest(
                bundleIdentifier: "com.example.app.share", name: "Share", executables: [folder.appendingPathComponent("share-extension.py").path],
                backgroundSessionIdentifier: "com.example.app.bg")]))
        return folder
    }

    /// The extension: submits a data task to a URL that asks for HTTP Basic, with no credential.
    static let challengedExtensionScript = #"""
        #!/usr/bin/python3
        import sys; sys.path.insert(0, sys.argv[1])
        from ferryclient import *
        s = connect(); hello(s, "com.example.app.share")
        a = request(s, 1, {"type": "attach", "sessionIdentifier": "com.example.app.bg", "sharedContainerIdentifier": "group.example", "owner": True})
        assert a["type"] == "reply", a
        r = request(s, 2, {"type": "submit", "sessionIdentifier": "com.example.app.bg", "kind": "data", "priority": 0.5,
                           "request": {"url": sys.argv[2], "method": "GET", "headers": []}})
        assert r["type"] == "reply", r
        """#

    /// The app, started by ferryd: offers to answer challenges, answers with alice's password,
    /// records what it is sent up to the task's end, and acknowledges it.
    static let answeringAppScript = #"""
        #!/usr/bin/python3
        import sys, json; sys.path.insert(0, sys.argv[1])
        from ferryclient import *
        session, out = sys.argv[2], sys.argv[3]
        s = connect()
        send(s, {"type": "hello", "protocolVersion": 1, "clientName": "com.example.app", "pid": os.getpid(), "answersChallenges": True})
        assert receive(s)["type"] == "welcome"
        send(s, {"type": "request", "requestID": 1, "request": {"type": "attach", "sessionIdentifier": session, "sharedContainerIdentifier": "group.example", "owner": True}})
        with open(out, "a") as f:
            while True:
                m = receive(s)
                f.write(json.dumps(m) + "\n"); f.flush()
                if m["type"] == "challenge":
                    send(s, {"type": "request", "requestID": 2, "request": {"type": "answerChallenge", "challengeID": m["challengeID"],
                             "sessionIdentifier": session, "disposition": "useCredential", "credential": {"user": "alice", "password": "secret"}}})
                if m["type"] == "event" and m["kind"]["type"] in ("completed", "failed"):
                    request(s, 3, {"type": "acknowledge", "sessionIdentifier": session, "upToSequence": m["sequence"]})
                    break
        """#

    @Test("a task's 401 while nobody owns its session: ferryd starts the app, asks it once it attaches, and the app's credential is used")
    func launchedToAnswerAChallenge() async throws {
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()
        let received = ferryd.root.appendingPathComponent("app-messages.jsonl").path
        let folder = try Self.installPrograms(
            ferryd, ["share-extension.py": Self.challengedExtensionScript, "app.py": Self.answeringAppScript], launchArguments: [received])
        let extensionPath = folder.appendingPathComponent("share-extension.py").path
        try await ferryd.start()

        let share = Process()
        share.executableURL = URL(fileURLWithPath: extensionPath)
        share.arguments = [folder.path, server.baseURL + "/basic-auth/alice/secret"]
        share.environment = ferryd.environment
        try share.run()
        share.waitUntilExit()
        #expect(share.terminationStatus == 0)

        var lines: [String] = []
        try await poll(until: "the started app to record the task's end in \(received)", timeout: .seconds(30), every: .milliseconds(100),
                       observed: "its lines: \(lines)\nferryd's log: \(ferryd.log.suffix(2000))") {
            lines = ((try? String(contentsOfFile: received, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            return lines.contains { $0.contains(#""completed""#) || $0.contains(#""failed""#) }
        }
        let messages = try lines.map { try MessageCoder().decode(DaemonMessage.self, from: .init(string: $0)) }
        let challenges = messages.compactMap { if case .challenge(let c) = $0 { c } else { nil } }
        #expect(challenges.count == 1 && challenges.first?.realm == "ferry" && challenges.first?.previousFailureCount == 0, "\(lines)")
        let events = messages.compactMap(\.event)
        guard case .response(let head)? = events.first?.kind else { throw TestFailure("no response: \(lines)") }
        #expect(head.statusCode == 200, "the app's credential was used: \(lines)")
        #expect(events.map(\.kind.name) == ["response", "data", "completed"], "\(lines)")
        #expect(ferryd.log.contains("launching app for an authentication challenge"), "\(ferryd.log.suffix(2000))")
        try await server.shutdown()
    }

    @Test("an extension uploads and exits; ferryd launches the containing app, which receives exactly one completion with the server's response")
    func extensionThenApp() async throws {
        try await extensionThenApp(sendsLaunchEvents: true)
    }

    @Test("the app already runs and asked to be told: ferryd tells it (eventsWaiting) instead of starting a second copy")
    func runningAppIsTold() async throws {
        try await extensionThenApp(sendsLaunchEvents: true, appRunning: true)
    }

    @Test("sendsLaunchEvents false: ferryd does not start the app; the events wait until the app attaches by itself")
    func noLaunchEvents() async throws {
        try await extensionThenApp(sendsLaunchEvents: false)
    }

    private func extensionThenApp(sendsLaunchEvents: Bool, appRunning: Bool = false) async throws {
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()
        let events = ferryd.root.appendingPathComponent("app-events.jsonl").path
        let folder = try Self.installPrograms(
            ferryd, ["share-extension.py": Self.extensionScript, "app.py": Self.appScript, "running-app.py": Self.runningAppScript],
            launchArguments: [events])
        let (extensionPath, appPath) = (folder.appendingPathComponent("share-extension.py").path, folder.appendingPathComponent("app.py").path)
        let runningAppPath = folder.appendingPathComponent("running-app.py").path
        let paths = FerryPaths(dataDirectory: ferryd.dataDirectory, runtimeDirectory: ferryd.runtimeDirectory)
        try await ferryd.start()

        let container = paths.containerURL(forGroup: "group.example")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        let photo = try makeFile(container, "photo.jpg", count: 2_000_000, seed: 11)

        var running: Process?
        if appRunning {
            let ready = ferryd.root.appendingPathComponent("running-app.ready").path
            let app = Process()
            app.executableURL = URL(fileURLWithPath: runningAppPath)
            app.arguments = [folder.path, events, ready]
            app.environment = ferryd.environment
            try app.run()
            running = app
            try await poll(until: "the running app to attach to its own session", timeout: .seconds(10), every: .milliseconds(50),
                           observed: String(ferryd.log.suffix(2000))) { FileManager.default.fileExists(atPath: ready) }
        }
        defer { if let running, running.isRunning { running.terminate() } }

        let share = Process()
        share.executableURL = URL(fileURLWithPath: extensionPath)
        share.arguments = [folder.path, photo.path, server.baseURL + "/upload"] + (sendsLaunchEvents ? [] : ["nolaunch"])
        share.environment = ferryd.environment
        try share.run()
        share.waitUntilExit()
        #expect(share.terminationStatus == 0)
        if !sendsLaunchEvents {
            try await poll(until: "the upload to reach the server", timeout: .seconds(30), every: .milliseconds(50), observed: String(ferryd.log.suffix(2000))) {
                server.requests.contains { $0.method == "POST" }
            }
            // The completion is stored a moment after the server answered; ferryd would launch then.
            try await poll(until: "ferryd to say the events wait for the app", timeout: .seconds(10), every: .milliseconds(50), observed: String(ferryd.log.suffix(2000))) {
                ferryd.log.contains("events wait for the app to attach")
            }
            try await Task.sleep(for: .seconds(1))
            #expect(!ferryd.log.contains("launching app for session events"), "\(ferryd.log.suffix(2000))")
            #expect(!FileManager.default.fileExists(atPath: events), "the app was not started")
            let app = Process()
            app.executableURL = URL(fileURLWithPath: appPath)
            app.arguments = [folder.path, "com.example.app.bg", events]
            app.environment = ferryd.environment
            try app.run()
            app.waitUntilExit()
            #expect(app.terminationStatus == 0)
        }

        var lines: [String] = []
        try await poll(until: "the launched app to write the completion to \(events)", timeout: .seconds(30), every: .milliseconds(100),
                       observed: "its lines: \(lines)\nferryd's log: \(ferryd.log.suffix(2000))") {
            lines = ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            return lines.contains { $0.contains(#""completed""#) }
        }
        let messages = try lines.map { try MessageCoder().decode(DaemonMessage.self, from: .init(string: $0)) }
        if appRunning {
            #expect(messages.first == .eventsWaiting(sessionIdentifier: "com.example.app.bg"), "\(lines)")
            #expect(ferryd.log.contains("telling the running app of its session's events"))
        }
        let decoded = messages.compactMap(\.event)
        #expect(decoded.map(\.kind.name) == ["response", "data", "completed"], "\(lines)\n\(ferryd.log.suffix(2000))")
        if case .data(let body) = decoded.first(where: { $0.kind.name == "data" })?.kind {
            let answer = try JSONSerialization.jsonObject(with: body) as? [String: Any]
            #expect(answer?["sha256"] as? String == TestContent.sha256Hex(count: 2_000_000, seed: 11))
        }
        #expect(ferryd.log.contains("launching app for session events") == (sendsLaunchEvents && !appRunning), "\(ferryd.log.suffix(2000))")
        #expect(server.requests.filter { $0.method == "POST" }.count == 1)
        // Acknowledged: no second launch, no second completion.
        try await Task.sleep(for: .milliseconds(500))
        let after = ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(after.count == (appRunning ? 4 : 3))
        try await server.shutdown()
    }
}
