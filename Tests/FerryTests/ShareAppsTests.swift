import Ferry
import FerryApps
import FerryTestSupport
import Foundation
import Testing

/// ShareAlike and ImgShare as a user runs them: the real `ferry share` runs the real extension
/// process, which hands its work to the real ferryd and exits; byteclub-server receives it;
/// ferryd relaunches the containing app, which records the outcome; the app's `history`
/// shows it. And the compose sheet, driven through tmux as a person would type.
@Suite("Share extensions end to end: ShareAlike and ImgShare", .serialized, .timeLimit(.minutes(3)))
struct ShareAppsTests {
    @Test("ShareAlike: the bin set up by the app is in the group's UserDefaults, in its container; the extension exits within 100 ms of Post; the bin holds {text, image_details} with the right width, height and orientation; the outcome is recorded once (by the relaunched app, or the extension if still there) and `history` shows HTTP 200")
    func shareAlikePostsToABin() async throws {
        let world = try await ShareWorld.start()
        defer { world.stop() }
        try await world.install("ShareAlike")
        let bin = try await world.setUpShareAlike()
        // The bin is in the group's UserDefaults(suiteName:), whose file lives in the group's container.
        let defaults = world.daemon.dataDirectory.appendingPathComponent("groups/group.org.ferry.sharealike/Library/Preferences/group.org.ferry.sharealike.plist")
        let stored = try #require(FileManager.default.contents(atPath: defaults.path), "no defaults in the container at \(defaults.path)")
        let plist = try #require(try PropertyListSerialization.propertyList(from: stored, format: nil) as? [String: Any])
        #expect(plist["binURL"] as? String == bin, "\(plist)")

        // 640×480 pixels stored, shown rotated: EXIF orientation 6 (RightTop).
        let image = world.scratch.appendingPathComponent("cow.jpg")
        try await TestImages.orientedJPEG(at: image, width: 640, height: 480, orientation: 6)

        let shared = try await world.ferry(["share", image.path, "--text", "Highland Cow", "--to", "org.ferry.sharealike.share", "--post", "--json"])
        #expect(shared.status == 0, "ferry share: \(shared.errorOutput)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(shared.output.utf8)) as? [String: Any])
        #expect(report["outcome"] as? String == "completed")
        let afterPost = try #require(report["exitAfterPostMilliseconds"] as? Double)
        #expect(afterPost < 100, "the extension lived \(afterPost) ms after Post")

        let requests = try await world.binRequests(bin, atLeast: 1)
        #expect(requests.count == 1)
        let recorded = try #require(requests.first)
        #expect(recorded["method"] as? String == "POST")
        let headers = Dictionary(((recorded["headers"] as? [String: String]) ?? [:]).map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(headers["content-type"] == "application/json")
        #expect(headers["accept"] == "application/json")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(((recorded["body"] as? String) ?? "").utf8)) as? [String: Any])
        #expect(body["text"] as? String == "Highland Cow")
        let details = try #require(body["image_details"] as? [String: Any])
        // As UIKit gives them: the size shown upright, UIImage.Orientation.right.
        #expect(details["width"] as? Int == 480)
        #expect(details["height"] as? Int == 640)
        #expect(details["orientation"] as? Int == 3)
        #expect(details["scale"] as? Double == 1)
        #expect((details["description"] as? String)?.isEmpty == false)

        // The outcome is recorded once, by the app ferryd relaunches — or by the extension, when
        // the post finished while it was still connected (rule 5: the same code in both).
        let history = try await world.waitForOutput(["sharealike", "history"], containing: "HTTP 200")
        #expect(history.contains("\"Highland Cow\" + image 480×640, UIKit orientation 3"))
        try await Task.sleep(for: .milliseconds(500))  // a second record, if any, would land now
        let log = world.paths.containerURL(forGroup: "group.org.ferry.sharealike").appendingPathComponent("history.jsonl")
        let completions = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
            .compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["event"] as? String == "completed" }
        #expect(completions.count == 1)
        #expect(completions.first?["status"] as? Int == 200)
        if completions.first?["handledBy"] as? String == "app" {
            #expect(FileManager.default.fileExists(atPath: world.daemon.dataDirectory.appendingPathComponent("logs/org.ferry.sharealike.log").path))
        }
        // ferryd never launches the extension.
        #expect(!FileManager.default.fileExists(atPath: world.daemon.dataDirectory.appendingPathComponent("logs/org.ferry.sharealike.share.log").path))
    }

    @Test("ImgShare: the extension uploads the image itself with Client-ID in the background and exits within 100 ms of Post; the stored bytes match by SHA-256; `imgshare history` lists the link")
    func imgShareUploadsTheImage() async throws {
        let world = try await ShareWorld.start()
        defer { world.stop() }
        try await world.install("ImgShare")
        let setup = try await world.run(["imgshare", "setup", "--server", world.server.baseURL, "--client-id", ShareWorld.clientID])
        #expect(setup.status == 0, "imgshare setup: \(setup.errorOutput)")

        let image = world.scratch.appendingPathComponent("gate.png")
        try runTool("/usr/bin/convert", ["-size", "300x200", "plasma:fractal", image.path])
        let bytes = try Data(contentsOf: image)

        let shared = try await world.ferry(["share", image.path, "--text", "Gate", "--to", "org.ferry.imgshare.share", "--post", "--json"])
        #expect(shared.status == 0, "ferry share: \(shared.errorOutput)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(shared.output.utf8)) as? [String: Any])
        let afterPost = try #require(report["exitAfterPostMilliseconds"] as? Double)
        #expect(afterPost < 100, "the extension lived \(afterPost) ms after Post")

        let history = try await world.waitForOutput(["imgshare", "history"], containing: "http")
        let link = try #require(history.split(separator: " ").last.map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) })
        #expect(history.contains("\"Gate\""))
        let stored = try await world.get(link)
        #expect(sha256Hex(stored) == sha256Hex(bytes))
        // The outbox copy ferryd read from is gone once the upload is recorded.
        let outbox = world.paths.containerURL(forGroup: "group.org.ferry.imgshare").appendingPathComponent("outbox")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: outbox.path)) ?? []).isEmpty)
    }

    @Test("the compose sheet through tmux: 30 characters show -5 in red and Post does nothing; deleting five enables Post; edits in the middle (Left, Home, Delete) are what is posted")
    func composeSheetInATerminal() async throws {
        let world = try await ShareWorld.start()
        defer { world.stop() }
        try await world.install("ShareAlike")
        let bin = try await world.setUpShareAlike()
        // The bin is in the group's UserDefaults(suiteName:), whose file lives in the group's container.
        let defaults = world.daemon.dataDirectory.appendingPathComponent("groups/group.org.ferry.sharealike/Library/Preferences/group.org.ferry.sharealike.plist")
        let stored = try #require(FileManager.default.contents(atPath: defaults.path), "no defaults in the container at \(defaults.path)")
        let plist = try #require(try PropertyListSerialization.propertyList(from: stored, format: nil) as? [String: Any])
        #expect(plist["binURL"] as? String == bin, "\(plist)")
        let image = world.scratch.appendingPathComponent("cow.jpg")
        try runTool("/usr/bin/convert", ["-size", "64x48", "xc:sienna", image.path])

        let tmux = try TmuxSession(environment: world.environment, command: [try BuiltProducts.path(of: "ferry"), "share", image.path, "--to", "org.ferry.sharealike.share"])
        defer { tmux.kill() }
        _ = try await tmux.waitForScreen(containing: "[Esc] Cancel")
        let typed = String(repeating: "abcdefghij", count: 3)
        try tmux.type(typed)
        let over = try await tmux.waitForScreen(containing: "characters remaining", escapes: true) { $0.contains("-5") }
        #expect(over.contains("\u{1B}[31m-5"), "-5 is not red: \(over.debugDescription)")
        #expect(over.contains("(disabled)"))
        try tmux.press("Enter")
        let refused = try await tmux.waitForScreen(containing: "Post is disabled")
        #expect(refused.contains("abcdefghij"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await world.binRequests(bin, atLeast: 0).isEmpty, "Post went out while the content was invalid")

        for _ in 0..<5 { try tmux.press("BSpace") }
        _ = try await tmux.waitForScreen(containing: "0 characters remaining", escapes: true)
        // The cursor moves: three left, Backspace there, an X; then Home, Delete, a Z.
        for _ in 0..<3 { try tmux.press("Left") }
        try tmux.press("BSpace")
        _ = try await tmux.waitForScreen(containing: "1 characters remaining")
        try tmux.type("X")
        try tmux.press("Home")
        try tmux.press("DC")
        _ = try await tmux.waitForScreen(containing: "1 characters remaining")
        try tmux.type("Z")
        let edited = "Z" + String(typed.prefix(21).dropFirst()) + "Xcde"
        let valid = try await tmux.waitForScreen(containing: "0 characters remaining", escapes: true) { $0.contains("aXcde") }
        #expect(valid.contains("Z\u{1B}[7mb"), "the cursor stands after the Z, on the b: \(valid.debugDescription)")
        #expect(!valid.contains("\u{1B}[31m0"))
        #expect(!valid.contains("(disabled)"))
        try tmux.press("Enter")
        let done = try await tmux.waitForScreen(containing: "exit status")
        #expect(done.contains("shared with ShareAlike"))
        #expect(done.contains("exit status 0"))
        // The extension's standard error went to its log, not over the sheet.
        #expect(!done.contains(" info ") && !done.contains(" notice "), "log lines on the terminal: \(done)")
        let extensionLog = world.daemon.dataDirectory.appendingPathComponent("logs/org.ferry.sharealike.share.extension.log").path
        let mode = (try? FileManager.default.attributesOfItem(atPath: extensionLog)[.posixPermissions] as? Int) ?? nil
        #expect(mode == 0o600, "the extension's log is missing or not private: \(String(describing: mode))")
        let requests = try await world.binRequests(bin, atLeast: 1)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(((requests.first?["body"] as? String) ?? "").utf8)) as? [String: Any])
        #expect(body["text"] as? String == edited, "\(body)")
    }

    @Test("`ferry share` offers only the extensions whose rules accept the items, and `ferry apps install` refuses a rule with an unknown key, naming it")
    func shareSheetOffersByRule() async throws {
        let world = try await ShareWorld.start()
        defer { world.stop() }
        try await world.install("ShareAlike")
        try await world.install("ImgShare")
        let one = world.scratch.appendingPathComponent("one.jpg")
        let two = world.scratch.appendingPathComponent("two.jpg")
        for file in [one, two] { try runTool("/usr/bin/convert", ["-size", "8x8", "xc:red", file.path]) }

        func offered(_ arguments: [String]) async throws -> Set<String> {
            let listed = try await world.ferry(["share"] + arguments + ["--list", "--json"])
            #expect(listed.status == 0, "ferry share --list: \(listed.errorOutput)")
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]])
            return Set(entries.filter { $0["offered"] as? Bool == true }.compactMap { $0["bundleIdentifier"] as? String })
        }
        #expect(try await offered([one.path]) == ["org.ferry.sharealike.share", "org.ferry.imgshare.share"])
        #expect(try await offered([one.path, two.path]) == [])
        #expect(try await offered(["--text", "just words"]) == ["org.ferry.sharealike.share"])
        #expect(try await offered([one.path, "--text", "a cow"]) == ["org.ferry.sharealike.share", "org.ferry.imgshare.share"])

        // Choosing a refused one says why.
        let refused = try await world.ferry(["share", one.path, two.path, "--to", "org.ferry.sharealike.share", "--post"])
        #expect(refused.status == 1)
        #expect(refused.errorOutput.contains("does not accept"))

        let manifest = try ShareWorld.manifest("ShareAlike")
            .replacingOccurrences(of: "NSExtensionActivationSupportsText", with: "NSExtensionActivationSupportsTxt")
        let bad = world.scratch.appendingPathComponent("bad.json")
        try manifest.write(to: bad, atomically: true, encoding: .utf8)
        let install = try await world.ferry(["apps", "install", bad.path])
        #expect(install.status == 1)
        #expect(install.errorOutput.contains("NSExtensionActivationSupportsTxt"))
    }
}

/// ferryd, byteclub-server and a scratch folder for one test, and ways to run the real programs.
struct ShareWorld {
    static let clientID = "sharekit-client"
    let daemon: DaemonHarness
    let server: ByteClubProcess
    let scratch: URL

    static var examples: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Examples")
    }

    static func start() async throws -> ShareWorld {
        let daemon = try await DaemonHarness.start()
        let server = try await ByteClubProcess.start(clientID: clientID)
        return ShareWorld(daemon: daemon, server: server, scratch: try makeTemporaryDirectory())
    }

    func stop() {
        server.stop()
        daemon.stop()
        try? FileManager.default.removeItem(at: scratch)
    }

    var environment: [String: String] { daemon.environment.merging(["FERRYD_PATH": daemon.ferrydPath]) { $1 } }
    var paths: FerryPaths { FerryPaths(dataDirectory: daemon.dataDirectory, runtimeDirectory: daemon.runtimeDirectory) }

    /// The example's manifest (`ShareAlike`: `sharealike` and `sharealike-share`), naming the
    /// programs this build made.
    static func manifest(_ example: String) throws -> String {
        let app = example.lowercased()
        _ = try BuiltProducts.path(of: "\(app)-share")  // built too, or say that it is not
        let manifest = try String(contentsOfFile: examples.appendingPathComponent("\(example)/manifest.json").path, encoding: .utf8)
        return manifest.replacingOccurrences(of: "@BIN@", with: try BuiltProducts.folder(of: app))
    }

    /// The example's manifest, with this build's programs, through `ferry apps install`.
    func install(_ example: String) async throws {
        let file = scratch.appendingPathComponent("\(example).json")
        try Self.manifest(example).write(to: file, atomically: true, encoding: .utf8)
        let installed = try await ferry(["apps", "install", file.path])
        guard installed.status == 0 else { throw HarnessError("ferry apps install \(example): \(installed.errorOutput)") }
    }

    /// `sharealike setup` against this byteclub-server; the bin's URL.
    func setUpShareAlike() async throws -> String {
        let setup = try await run(["sharealike", "setup", "--server", server.baseURL])
        guard setup.status == 0, let line = setup.output.split(separator: "\n").first, line.hasPrefix("posts go to ") else {
            throw HarnessError("sharealike setup: \(setup.output) \(setup.errorOutput)")
        }
        return String(line.dropFirst("posts go to ".count))
    }

    struct Ran {
        var status: Int32
        var output: String
        var errorOutput: String
    }

    func ferry(_ arguments: [String]) async throws -> Ran { try await run(["ferry"] + arguments) }

    /// Runs one of the built programs with this world's ferryd directories.
    func run(_ command: [String]) async throws -> Ran {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: command[0]))
        process.arguments = Array(command.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = scratch.appendingPathComponent("out-\(UUID().uuidString)")
        let err = scratch.appendingPathComponent("err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try await waitForExit(process)
        return Ran(status: process.terminationStatus, output: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
                   errorOutput: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }

    /// Runs `command` until its output contains `text` (up to 30 s); that output.
    func waitForOutput(_ command: [String], containing text: String) async throws -> String {
        var last = ""
        return try await eventually("`\(command.joined(separator: " "))` to show \(text.debugDescription)", timeout: .seconds(30),
                                    every: .milliseconds(200), observed: last) {
            last = try await run(command).output
            return last.contains(text) ? last : nil
        }
    }

    /// The bin's recorded requests once there are at least `count` (up to 30 s).
    func binRequests(_ bin: String, atLeast count: Int) async throws -> [[String: Any]] {
        var held = 0
        return try await eventually("the bin \(bin) to hold \(count) requests", timeout: .seconds(30), every: .milliseconds(200),
                                    observed: "it held \(held)") {
            let requests = (try JSONSerialization.jsonObject(with: try await get(bin + "/requests")) as? [[String: Any]]) ?? []
            held = requests.count
            return requests.count >= count ? requests : nil
        }
    }

    func get(_ url: String) async throws -> Data {
        guard let address = URL(string: url) else { throw HarnessError("not a URL: \(url)") }
        let (data, response) = try await Session.shared.data(for: Request(url: address))
        guard response.statusCode == 200 else { throw HarnessError("GET \(url): HTTP \(response.statusCode)") }
        return data
    }
}

