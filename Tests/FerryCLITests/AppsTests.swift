// `ferry apps install|list|remove`, run as the real binary with its data in a temp folder.
import FerryTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct AppsTests {
    /// A temp folder holding FERRY_DATA_DIR, FERRY_RUNTIME_DIR and the apps' programs.
    struct Home {
        let scratch: Scratch
        var data: String { scratch.path("data") }

        init() throws {
            scratch = try Scratch()
            for program in ["opt/sharealike", "opt/sharealike-share"] {
                try FileManager.default.createDirectory(atPath: scratch.path("opt"), withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: "/usr/bin/sleep", toPath: scratch.path(program))
            }
        }

        /// The manifest of docs/apps.md, with programs in this folder; `change` breaks it.
        func manifest(_ change: (inout [String: Any]) -> Void = { _ in }) throws -> String {
            var object: [String: Any] = [
                "bundleIdentifier": "com.example.sharealike",
                "name": "ShareAlike",
                "executables": [scratch.path("opt/sharealike")],
                "launch": [scratch.path("opt/sharealike"), "--background-session", "{session}"],
                "appGroups": ["group.com.example.sharealike"],
                "extensions": [[
                    "bundleIdentifier": "com.example.sharealike.share",
                    "name": "Share to ShareAlike",
                    "executables": [scratch.path("opt/sharealike-share")],
                    "point": "share",
                    "backgroundSessionIdentifier": "com.example.sharealike.bg",
                    "attributes": ["NSExtensionActivationRule": ["NSExtensionActivationSupportsImageWithMaxCount": 10, "NSExtensionActivationSupportsText": true]],
                ]],
            ]
            change(&object)
            let path = scratch.path("manifest-\(UUID().uuidString.prefix(6)).json")
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
            return path
        }

        /// Runs `ferry args…` with this folder's FERRY_DATA_DIR, FERRY_RUNTIME_DIR and XDG_CONFIG_HOME.
        func ferry(_ args: [String]) async throws -> FerryRun {
            let binary = try BuiltProducts.path(of: "ferry")
            let out = scratch.url.appendingPathComponent("out-\(UUID().uuidString.prefix(6))")
            let err = scratch.url.appendingPathComponent("err-\(UUID().uuidString.prefix(6))")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = args
            process.currentDirectoryURL = scratch.url
            var environment = ProcessInfo.processInfo.environment
            environment["FERRY_DATA_DIR"] = data
            environment["FERRY_RUNTIME_DIR"] = scratch.path("run")
            environment["XDG_CONFIG_HOME"] = scratch.path("config")
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            try process.run()
            return try await FerryBinary.wait((process, out, err), timeout: 30)
        }

        func mode(_ path: String) -> Int {
            var info = stat()
            guard lstat(path, &info) == 0 else { return -1 }
            return Int(info.st_mode & 0o7777)
        }
    }

    @Test func installListRemoveRoundTrip() async throws {
        let home = try Home()
        defer { home.scratch.remove() }
        let file = try home.manifest()

        // The app used UserDefaults(suiteName:) before it was installed: its file moves into the container.
        let suiteFile = home.scratch.path("config/group.com.example.sharealike.plist")
        try FileManager.default.createDirectory(atPath: home.scratch.path("config"), withIntermediateDirectories: true)
        try Data("earlier defaults".utf8).write(to: URL(fileURLWithPath: suiteFile))

        let install = try await home.ferry(["apps", "install", file, "--json"])
        #expect(install.status == 0, "\(install.stderr)")
        let installed = try #require(install.json)
        let container = home.data + "/groups/group.com.example.sharealike"
        #expect((installed["containers"] as? [String: String]) == ["group.com.example.sharealike": container])
        let defaults = container + "/Library/Preferences/group.com.example.sharealike.plist"
        #expect((installed["defaults"] as? [String: String]) == ["group.com.example.sharealike": defaults])
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: suiteFile)) == defaults,
                "Foundation's suite file is a link into the container")
        #expect(FileManager.default.contents(atPath: defaults) == Data("earlier defaults".utf8))
        #expect(installed["manifest"] as? String == home.data + "/apps/com.example.sharealike.json")
        #expect(home.mode(home.data + "/apps/com.example.sharealike.json") == 0o600)
        #expect(home.mode(container) == 0o700)

        let list = try await home.ferry(["apps", "list", "--json"])
        #expect(list.status == 0)
        let apps = try #require(list.json?["apps"] as? [[String: Any]])
        #expect(apps.map { $0["bundleIdentifier"] as? String } == ["com.example.sharealike"])
        let extensions = try #require(apps.first?["extensions"] as? [[String: Any]])
        #expect(extensions.first?["backgroundSessionIdentifier"] as? String == "com.example.sharealike.bg")

        let text = try await home.ferry(["apps", "list"])
        #expect(text.stdout.contains("com.example.sharealike  ShareAlike  groups group.com.example.sharealike"))
        #expect(text.stdout.contains("share extension com.example.sharealike.share"))

        let remove = try await home.ferry(["apps", "remove", "com.example.sharealike"])
        #expect(remove.status == 0, "\(remove.stderr)")
        #expect(remove.stdout.contains("kept the container of group.com.example.sharealike: \(container)"))
        #expect(FileManager.default.fileExists(atPath: container))
        let empty = try await home.ferry(["apps", "list"])
        #expect(empty.stdout == "no apps installed\n")
    }

    @Test func aBadManifestNamesTheFieldAndWritesNothing() async throws {
        let home = try Home()
        defer { home.scratch.remove() }
        let cases: [(String, (inout [String: Any]) -> Void, String)] = [
            ("missing", { $0["launch"] = nil }, "launch: missing"),
            ("wrong type", { $0["name"] = 7 }, "name: expected a string, found a number"),
            ("relative", { $0["executables"] = ["bin/sharealike"] }, "executables[0]: must be an absolute path"),
            ("bad id", { $0["bundleIdentifier"] = "sharealike" }, "bundleIdentifier: \"sharealike\" is not a reverse-DNS bundle identifier"),
            ("unknown point", {
                var items = $0["extensions"] as! [[String: Any]]
                items[0]["point"] = "today"
                $0["extensions"] = items
            }, "extensions[0].point: unknown extension point \"today\" (known: share)"),
        ]
        for (what, change, message) in cases {
            let file = try home.manifest(change)
            let run = try await home.ferry(["apps", "install", file])
            #expect(run.status == 1, "\(what): \(run.stderr)")
            #expect(run.stderr.hasPrefix("ferry: \(file): \(message)"), "\(what): \(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
        let json = try await home.ferry(["apps", "install", try home.manifest { $0["appGroups"] = ["nogroup"] }, "--json"])
        let error = try #require(json.json?["error"] as? [String: Any], "\(json.stdout)")
        #expect(error["code"] as? String == "invalidManifest")
        #expect((error["message"] as? String)?.contains("appGroups[0]") == true)
        // Nothing was written: no manifest, no container.
        #expect(!FileManager.default.fileExists(atPath: home.data + "/apps/com.example.sharealike.json"))
        #expect(!FileManager.default.fileExists(atPath: home.data + "/groups"))
    }

    /// Activation rules as the predicate strings of Info.plist: `ferry apps install` reads them
    /// (through ShareKit) and refuses one it cannot read, naming the character.
    @Test func predicateActivationRules() async throws {
        let home = try Home()
        defer { home.scratch.remove() }
        func withRule(_ rule: String) -> (inout [String: Any]) -> Void {
            { manifest in
                var items = manifest["extensions"] as! [[String: Any]]
                items[0]["attributes"] = ["NSExtensionActivationRule": rule]
                manifest["extensions"] = items
            }
        }
        let oneImage = #"SUBQUERY (extensionItems, $extensionItem, SUBQUERY ($extensionItem.attachments, $attachment, ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image").@count == 1).@count == 1"#
        let install = try await home.ferry(["apps", "install", try home.manifest(withRule(oneImage))])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(try String(contentsOfFile: home.data + "/apps/com.example.sharealike.json", encoding: .utf8).contains("UTI-CONFORMS-TO"))

        let file = try home.manifest(withRule("SUBQUERY(extensionItems, $e, ALL $e.attachments).@count == 1"))
        let refused = try await home.ferry(["apps", "install", file])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix(#"ferry: \#(file): extensions[0].attributes.NSExtensionActivationRule: cannot read the predicate: at character 30: expected a predicate"#),
                "\(refused.stderr)")
    }

    @Test func unreadableFileExitsWith26() async throws {
        let home = try Home()
        defer { home.scratch.remove() }
        let run = try await home.ferry(["apps", "install", home.scratch.path("missing.json")])
        #expect(run.status == 26)
        #expect(run.stderr.contains("cannot read \(home.scratch.path("missing.json")): No such file or directory"))
    }

    @Test func removingAnAppThatIsNotInstalledFails() async throws {
        let home = try Home()
        defer { home.scratch.remove() }
        let run = try await home.ferry(["apps", "remove", "com.example.nothere", "--json"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("no app com.example.nothere is installed"))
        let error = try #require(run.json?["error"] as? [String: Any])
        #expect(error["code"] as? String == "notInstalled")
        let usage = try await home.ferry(["apps", "remove"])
        #expect(usage.status == 2)
    }

    @Test func aDamagedManifestIsReportedByList() async throws {
        let home = try Home()
        defer { home.scratch.remove() }
        #expect(try await home.ferry(["apps", "install", try home.manifest()]).status == 0)
        try Data("{".utf8).write(to: URL(fileURLWithPath: home.data + "/apps/com.example.broken.json"))
        let run = try await home.ferry(["apps", "list", "--json"])
        #expect(run.status == 0)
        #expect(run.stderr.contains("com.example.broken.json is skipped: not valid JSON"))
        let damaged = try #require(run.json?["damaged"] as? [[String: Any]])
        #expect(damaged.count == 1)
        #expect((run.json?["apps"] as? [[String: Any]])?.count == 1)
    }
}
