// AppRegistry on a real folder: install/list/remove with file modes, conflicts, damaged
// files, app-group containers for members only.
import FerryApps
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

struct RegistryTests {
    @Test func installListRemoveRoundTripWithModes() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let manifest = try shareAlike(in: sandbox)
        let file = try sandbox.write(String(decoding: try JSONEncoder().encode(manifest), as: UTF8.self), to: "sharealike.json", mode: 0o644)

        let installed = try sandbox.registry.install(manifestAt: URL(fileURLWithPath: file))
        #expect(installed == manifest)
        let stored = sandbox.paths.appsDirectory.appendingPathComponent("com.example.sharealike.json").path
        #expect(mode(stored) == 0o600)
        #expect(mode(sandbox.paths.appsDirectory.path) == 0o700)
        #expect(mode(sandbox.paths.dataDirectory.path) == 0o700)
        let container = sandbox.paths.containerURL(forGroup: "group.com.example.sharealike").path
        #expect(mode(container) == 0o700)
        #expect(mode(sandbox.paths.groupsDirectory.path) == 0o700)

        #expect(try sandbox.registry.list() == [manifest])
        #expect(try sandbox.registry.app(bundleIdentifier: "com.example.sharealike") == manifest)
        #expect(try sandbox.registry.app(bundleIdentifier: "com.example.other") == nil)

        // A file in the container survives removal: containers are kept.
        try Data("kept".utf8).write(to: URL(fileURLWithPath: container).appendingPathComponent("photo.jpg"))
        try sandbox.registry.remove(bundleIdentifier: "com.example.sharealike")
        #expect(try sandbox.registry.list().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: stored))
        #expect(FileManager.default.contents(atPath: container + "/photo.jpg") == Data("kept".utf8))
        // No temporary files are left behind by the atomic write.
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.paths.appsDirectory.path).isEmpty)
    }

    @Test func reinstallReplacesTheSameApp() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        var manifest = try shareAlike(in: sandbox)
        try sandbox.registry.install(manifest)
        manifest.name = "ShareAlike 2"
        manifest.appGroups.append("group.com.example.second")
        try sandbox.registry.install(manifest)
        #expect(try sandbox.registry.list() == [manifest])
        #expect(mode(sandbox.paths.containerURL(forGroup: "group.com.example.second").path) == 0o700)
    }

    @Test func removingAnUnknownAppSaysSo() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let error = #expect(throws: AppRegistryError.self) { try sandbox.registry.remove(bundleIdentifier: "com.example.nothere") }
        #expect(error?.code == .notInstalled)
        #expect(error?.description.contains("com.example.nothere") == true)
        let traversal = #expect(throws: AppRegistryError.self) { try sandbox.registry.remove(bundleIdentifier: "../../etc/passwd") }
        #expect(traversal?.code == .notInstalled)
    }

    @Test func aBadManifestWritesNothing() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        var manifest = try shareAlike(in: sandbox)
        manifest.extensions[0].point = "today"
        let error = #expect(throws: AppManifestError.self) { try sandbox.registry.install(manifest) }
        #expect(error?.field == "extensions[0].point")
        #expect(!FileManager.default.fileExists(atPath: sandbox.paths.dataDirectory.path))
    }

    @Test func missingOrNonExecutableProgramsAreNamed() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        var manifest = try shareAlike(in: sandbox)
        manifest.extensions[0].executables = [sandbox.url("opt/sharealike/bin/missing").path]
        let missing = #expect(throws: AppManifestError.self) { try sandbox.registry.install(manifest) }
        #expect(missing?.field == "extensions[0].executables[0]")
        #expect(missing?.reason.contains("No such file") == true)

        manifest.extensions[0].executables = [try sandbox.program("opt/share2")]
        let notExecutable = try sandbox.write("data", to: "opt/plain", mode: 0o644)
        manifest.executables = [notExecutable]
        manifest.launch = [notExecutable]
        let refused = #expect(throws: AppManifestError.self) { try sandbox.registry.install(manifest) }
        #expect(refused?.field == "executables[0]")
        #expect(refused?.reason.contains("not executable") == true)
        #expect(try sandbox.registry.list().isEmpty)
    }

    @Test func anotherAppCannotClaimTheSameProgramOrIdentifier() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let first = try shareAlike(in: sandbox)
        try sandbox.registry.install(first)

        // Another app listing the extension's program through a symlink.
        let link = sandbox.url("link-to-share").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: first.extensions[0].executables[0])
        let thief = AppManifest(bundleIdentifier: "com.example.thief", name: "Thief", executables: [link], launch: [link])
        let program = #expect(throws: AppManifestError.self) { try sandbox.registry.install(thief) }
        #expect(program?.field == "executables[0]")
        #expect(program?.reason.contains("com.example.sharealike.share") == true)

        // An app whose bundle identifier is an installed extension's.
        let other = try sandbox.program("opt/other")
        let clash = AppManifest(bundleIdentifier: "com.example.sharealike.share", name: "Clash", executables: [other], launch: [other])
        let identifier = #expect(throws: AppManifestError.self) { try sandbox.registry.install(clash) }
        #expect(identifier?.field == "bundleIdentifier")
        #expect(try sandbox.registry.list() == [first])
    }

    @Test func racingInstallsOfOneProgramLetExactlyOneWin() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let program = try sandbox.program("opt/contested")
        let registry = sandbox.registry
        let outcomes = Outcomes()
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let manifest = AppManifest(bundleIdentifier: "com.example.racer\(index)", name: "Racer", executables: [program], launch: [program])
            do {
                try registry.install(manifest)
                outcomes.record(succeeded: true)
            } catch {
                outcomes.record(succeeded: false)
            }
        }
        #expect(outcomes.counts == (1, 7))
        #expect(try registry.list().count == 1)
    }

    @Test func anEmptyRegistryListsNothing() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        #expect(try sandbox.registry.list().isEmpty)
        #expect(try sandbox.registry.damagedManifests().isEmpty)
        #expect(try sandbox.registry.identify(executable: "/usr/bin/sleep") == .unregistered(executable: "/usr/bin/sleep"))
    }

    @Test func damagedManifestFilesAreSkippedAndNamed() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let manifest = try shareAlike(in: sandbox)
        try sandbox.registry.install(manifest)
        let broken = sandbox.paths.appsDirectory.appendingPathComponent("com.example.broken.json")
        try Data("{ not json".utf8).write(to: broken)
        #expect(try sandbox.registry.list() == [manifest])
        let damaged = try sandbox.registry.damagedManifests()
        #expect(damaged.map(\.file.lastPathComponent) == ["com.example.broken.json"])
        #expect(damaged.first?.problem.contains("not valid JSON") == true)
    }

    @Test func containersAreForMembersOnly() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let manifest = try shareAlike(in: sandbox)
        try sandbox.registry.install(manifest)
        let group = "group.com.example.sharealike"
        let app = try sandbox.registry.identify(executable: manifest.executables[0])
        let share = try sandbox.registry.identify(executable: manifest.extensions[0].executables[0])

        #expect(try sandbox.registry.containerURL(forGroup: group, for: app) == sandbox.paths.containerURL(forGroup: group))
        #expect(try sandbox.registry.containerURL(forGroup: group, for: share) == sandbox.paths.containerURL(forGroup: group))

        let stranger = #expect(throws: AppRegistryError.self) {
            try sandbox.registry.containerURL(forGroup: group, for: .unregistered(executable: "/usr/bin/ferry"))
        }
        #expect(stranger?.code == .notInAppGroup)
        #expect(stranger?.description.contains(group) == true)
        let otherGroup = #expect(throws: AppRegistryError.self) {
            try sandbox.registry.containerURL(forGroup: "group.com.example.other", for: app)
        }
        #expect(otherGroup?.code == .notInAppGroup)
        #expect(!FileManager.default.fileExists(atPath: sandbox.paths.containerURL(forGroup: "group.com.example.other").path))
    }

    @Test func identifiesByResolvedPath() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let manifest = try shareAlike(in: sandbox)
        try sandbox.registry.install(manifest)
        // The same program through a symlink and a dotted path.
        let link = sandbox.url("bin-link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: sandbox.url("opt/sharealike/bin").path)
        let viaLink = try sandbox.registry.identify(executable: link + "/../bin/sharealike-share")
        #expect(viaLink == .appExtension(manifest.extensions[0], containingApp: manifest))
        #expect(viaLink.appGroups == ["group.com.example.sharealike"])
        #expect(viaLink.containingApp == manifest)
        #expect(viaLink.isExtension)
        #expect(try sandbox.registry.identify(executable: "/usr/bin/sleep") == .unregistered(executable: "/usr/bin/sleep"))
        #expect(try sandbox.registry.identify(executable: nil) == .unregistered(executable: nil))
        #expect(PeerIdentity.unregistered(executable: nil).appGroups.isEmpty)
    }
}

/// Successes and failures counted from several threads.
final class Outcomes: @unchecked Sendable {  // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var succeeded = 0
    private var failed = 0

    func record(succeeded ok: Bool) {
        lock.withLock { if ok { succeeded += 1 } else { failed += 1 } }
    }

    var counts: (Int, Int) { lock.withLock { (succeeded, failed) } }
}
