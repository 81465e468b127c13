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
        let folder = ferryd.root.appendingPathComponent("apps")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(Self.clientLibrary.utf8).write(to: folder.appendingPathComponent("ferryclient.py"))
        let extensionPath = folder.appendingPathComponent("share-extension.py").path
        let appPath = folder.appendingPathComponent("app.py").path
        let runningAppPath = folder.appendingPathComponent("running-app.py").path
        let events = ferryd.root.appendingPathComponent("app-events.jsonl").path
        for (path, text) in [(extensionPath, Self.extensionScript), (appPath, Self.appScript), (runningAppPath, Self.runningAppScript)] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o755)
        }
        let paths = FerryPaths(dataDirectory: ferryd.dataDirectory, runtimeDirectory: ferryd.runtimeDirectory)
        try AppRegistry(paths: paths).install(AppManifest(
            bundleIdentifier: "com.example.app", name: "Example", executables: [appPath, runningAppPath],
            launch: [appPath, folder.path, "{session}", events], appGroups: ["group.example"],
            extensions: [ExtensionManifest(
                bundleIdentifier: "com.example.app.share", name: "Share", executables: [extensionPath], backgroundSessionIdentifier: "com.example.app.bg")]))
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
