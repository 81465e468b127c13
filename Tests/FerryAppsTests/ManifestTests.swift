// Manifest validation: each bad field is named, with why; good manifests round-trip.
import FerryApps
import Foundation
import Testing

struct ManifestTests {
    /// A valid manifest as JSON objects, for tests to break one field at a time.
    static func valid() -> [String: Any] {
        [
            "bundleIdentifier": "com.example.sharealike",
            "name": "ShareAlike",
            "executables": ["/opt/sharealike/bin/sharealike"],
            "launch": ["/opt/sharealike/bin/sharealike", "--background-session", "{session}"],
            "appGroups": ["group.com.example.sharealike"],
            "extensions": [
                [
                    "bundleIdentifier": "com.example.sharealike.share",
                    "name": "Share to ShareAlike",
                    "executables": ["/opt/sharealike/bin/sharealike-share"],
                    "point": "share",
                    "backgroundSessionIdentifier": "com.example.sharealike.bg",
                    "attributes": ["activationRule": ["supportsImageWithMaxCount": 10]],
                ]
            ],
        ]
    }

    static func decode(_ object: Any) throws -> AppManifest {
        try AppManifest.decode(from: try JSONSerialization.data(withJSONObject: object))
    }

    /// The error for `object`, which must not decode.
    static func error(_ object: Any) -> AppManifestError? {
        do {
            _ = try decode(object)
            return nil
        } catch let error as AppManifestError {
            return error
        } catch {
            return AppManifestError(field: "?", "unexpected \(error)")
        }
    }

    static func withExtension(_ change: (inout [String: Any]) -> Void) -> [String: Any] {
        var manifest = valid()
        var items = manifest["extensions"] as! [[String: Any]]
        change(&items[0])
        manifest["extensions"] = items
        return manifest
    }

    @Test func validManifestDecodesWithEveryField() throws {
        let manifest = try Self.decode(Self.valid())
        #expect(manifest.bundleIdentifier == "com.example.sharealike")
        #expect(manifest.launch == ["/opt/sharealike/bin/sharealike", "--background-session", "{session}"])
        #expect(manifest.appGroups == ["group.com.example.sharealike"])
        let item = try #require(manifest.extensions.first)
        #expect(item.point == "share")
        #expect(item.backgroundSessionIdentifier == "com.example.sharealike.bg")
        #expect(item.attributes == .object(["activationRule": .object(["supportsImageWithMaxCount": .number(10)])]))
        #expect(manifest.appExtension(bundleIdentifier: "com.example.sharealike.share") == item)
    }

    @Test func groupsAndExtensionsMayBeLeftOut() throws {
        var object = Self.valid()
        object["appGroups"] = nil
        object["extensions"] = nil
        let manifest = try Self.decode(object)
        #expect(manifest.appGroups.isEmpty)
        #expect(manifest.extensions.isEmpty)
    }

    @Test func encodingRoundTripsAndKeepsAttributesAsWritten() throws {
        let manifest = try Self.decode(Self.valid())
        let again = try AppManifest.decode(from: JSONEncoder().encode(manifest))
        #expect(again == manifest)
    }

    /// (what is wrong, the manifest, the field the error must name, words the reason must contain)
    static var badManifests: [(String, Any, String, String)] { [
        ("missing bundle id", { var m = valid(); m["bundleIdentifier"] = nil; return m }(), "bundleIdentifier", "missing"),
        ("missing launch", { var m = valid(); m["launch"] = nil; return m }(), "launch", "missing"),
        ("name of the wrong type", { var m = valid(); m["name"] = 42; return m }(), "name", "expected a string, found a number"),
        ("executables not an array", { var m = valid(); m["executables"] = "/bin/app"; return m }(), "executables", "expected an array, found a string"),
        ("an executable of the wrong type", { var m = valid(); m["executables"] = ["/bin/app", true]; return m }(), "executables[1]", "expected a string, found a boolean"),
        ("null name", { var m = valid(); m["name"] = NSNull(); return m }(), "name", "found null"),
        ("relative executable", { var m = valid(); m["executables"] = ["bin/sharealike"]; return m }(), "executables[0]", "absolute path"),
        ("no executables", { var m = valid(); m["executables"] = [String](); return m }(), "executables", "at least one"),
        ("bad bundle id: one part", { var m = valid(); m["bundleIdentifier"] = "sharealike"; return m }(), "bundleIdentifier", "reverse-DNS"),
        ("bad bundle id: empty part", { var m = valid(); m["bundleIdentifier"] = "com..example"; return m }(), "bundleIdentifier", "reverse-DNS"),
        ("bad bundle id: a slash", { var m = valid(); m["bundleIdentifier"] = "com.example/../../etc"; return m }(), "bundleIdentifier", "reverse-DNS"),
        ("bad bundle id: a space", { var m = valid(); m["bundleIdentifier"] = "com.example app"; return m }(), "bundleIdentifier", "reverse-DNS"),
        ("empty name", { var m = valid(); m["name"] = "  "; return m }(), "name", "must not be empty"),
        ("empty launch", { var m = valid(); m["launch"] = [String](); return m }(), "launch", "must name the program"),
        ("relative launch", { var m = valid(); m["launch"] = ["sharealike", "{session}"]; return m }(), "launch[0]", "absolute path"),
        ("group without the prefix", { var m = valid(); m["appGroups"] = ["com.example.sharealike"]; return m }(), "appGroups[0]", "not an app group"),
        ("group with a slash", { var m = valid(); m["appGroups"] = ["group.a/../b"]; return m }(), "appGroups[0]", "not an app group"),
        ("group listed twice", { var m = valid(); m["appGroups"] = ["group.x", "group.y", "group.x"]; return m }(), "appGroups[2]", "listed twice"),
        ("unknown top-level key", { var m = valid(); m["appGroup"] = ["group.x"]; return m }(), "appGroup", "unknown field"),
        ("unknown extension key", withExtension { $0["pointt"] = "share" }, "extensions[0].pointt", "unknown field"),
        ("extension id not under the app's", withExtension { $0["bundleIdentifier"] = "com.example.other.share" }, "extensions[0].bundleIdentifier", "must start with the app's identifier"),
        ("extension id is a prefix trick", withExtension { $0["bundleIdentifier"] = "com.example.sharealikex" }, "extensions[0].bundleIdentifier", "must start with the app's identifier"),
        ("unknown point", withExtension { $0["point"] = "today" }, "extensions[0].point", "unknown extension point \"today\" (known: share)"),
        ("missing point", withExtension { $0["point"] = nil }, "extensions[0].point", "missing"),
        ("relative extension executable", withExtension { $0["executables"] = ["./share"] }, "extensions[0].executables[0]", "absolute path"),
        ("extension reuses the app's program", withExtension { $0["executables"] = ["/opt/sharealike/bin/sharealike"] }, "extensions[0].executables[0]", "already listed at executables[0]"),
        ("empty session identifier", withExtension { $0["backgroundSessionIdentifier"] = "" }, "extensions[0].backgroundSessionIdentifier", "1 to 255"),
        ("extension not an object", { var m = valid(); m["extensions"] = ["share"]; return m }(), "extensions[0]", "expected"),
    ] }

    @Test func eachBadFieldIsNamed() {
        for (what, manifest, field, reason) in Self.badManifests {
            let error = Self.error(manifest)
            #expect(error?.field == field, "\(what): \(String(describing: error))")
            #expect(error?.reason.contains(reason) == true, "\(what): \(String(describing: error))")
        }
    }

    @Test func duplicateExtensionIdentifiersAreRefused() {
        var manifest = Self.valid()
        var items = manifest["extensions"] as! [[String: Any]]
        var second = items[0]
        second["executables"] = ["/opt/sharealike/bin/second"]
        items.append(second)
        manifest["extensions"] = items
        let error = Self.error(manifest)
        #expect(error?.field == "extensions[1].bundleIdentifier")
        #expect(error?.reason.contains("used by another extension") == true)
    }

    @Test("two extensions naming one background session are refused: each has its own")
    func sharedExtensionSessionIsRefused() {
        var manifest = Self.valid()
        var items = manifest["extensions"] as! [[String: Any]]
        var second = items[0]
        second["bundleIdentifier"] = "com.example.sharealike.second"
        second["executables"] = ["/opt/sharealike/bin/second"]
        items.append(second)
        manifest["extensions"] = items
        let error = Self.error(manifest)
        #expect(error?.field == "extensions[1].backgroundSessionIdentifier", "\(String(describing: error))")
        #expect(error?.reason.contains("each extension has its own") == true)
    }

    @Test func notJSONOrNotAnObjectIsSaidSo() {
        let truncated = #expect(throws: AppManifestError.self) { try AppManifest.decode(from: Data("{\"name\": ".utf8)) }
        #expect(truncated?.field == "")
        #expect(truncated?.description.hasPrefix("not valid JSON") == true)
        let array = Self.error(["com.example.app"])
        #expect(array?.description == "expected a JSON object, found an array")
    }

    @Test func errorDescriptionIsFieldThenReason() {
        let error = AppManifestError(field: "extensions[0].point", "unknown extension point \"today\" (known: share)")
        #expect("\(error)" == "extensions[0].point: unknown extension point \"today\" (known: share)")
    }
}

/// The example in docs/apps.md is a valid manifest (the docs cannot drift from the rules).
struct DocumentedManifestTests {
    @Test func theDocumentedExampleDecodes() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/apps.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let start = try #require(text.range(of: "```json\n"))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        let manifest = try AppManifest.decode(from: Data(text[start.upperBound..<end.lowerBound].utf8))
        #expect(manifest.bundleIdentifier == "com.example.sharealike")
        #expect(manifest.appGroups == ["group.com.example.sharealike"])
        #expect(manifest.extensions.map(\.bundleIdentifier) == ["com.example.sharealike.share"])
        #expect(manifest.extensions.first?.point == "share")
    }
}
