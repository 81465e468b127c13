// FerryPaths: where things live from the environment, and refusing runtime folders that
// are not the user's alone.
import FerryApps
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

struct PathsTests {
    @Test func ferryVariablesComeFirst() throws {
        let paths = try FerryPaths(environment: [
            "FERRY_DATA_DIR": "/srv/ferry-data", "FERRY_RUNTIME_DIR": "/run/ferry-test",
            "XDG_DATA_HOME": "/home/me/.local/share", "XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/me",
        ])
        #expect(paths.dataDirectory.path == "/srv/ferry-data")
        #expect(paths.runtimeDirectory.path == "/run/ferry-test")
        #expect(paths.socketURL.path == "/run/ferry-test/ferryd.sock")
        #expect(paths.lockURL.path == "/run/ferry-test/ferryd.lock")
        #expect(paths.storeURL.path == "/srv/ferry-data/ferryd.sqlite")
        #expect(paths.appsDirectory.path == "/srv/ferry-data/apps")
        #expect(paths.groupsDirectory.path == "/srv/ferry-data/groups")
        #expect(paths.sessionFiles("org.example.bg").path == "/srv/ferry-data/session-files/org.example.bg")
        #expect(paths.sessionFiles("../x").path == "/srv/ferry-data/session-files/_._x")
        #expect(paths.logsDirectory.path == "/srv/ferry-data/logs")
        #expect(paths.containerURL(forGroup: "group.com.example.sharealike").path == "/srv/ferry-data/groups/group.com.example.sharealike")
    }

    @Test func containerNamesCannotLeaveTheGroupsFolder() {
        let paths = FerryPaths(dataDirectory: URL(fileURLWithPath: "/d"), runtimeDirectory: URL(fileURLWithPath: "/r"))
        #expect(paths.containerURL(forGroup: "group.com.example.a").path == "/d/groups/group.com.example.a")
        #expect(paths.containerURL(forGroup: "../../etc").path == "/d/groups/_._.._etc")
        #expect(paths.containerURL(forGroup: "..").path == "/d/groups/_.")
        #expect(paths.containerURL(forGroup: "").path == "/d/groups/_")
    }

    @Test func thenXDG() throws {
        let paths = try FerryPaths(environment: [
            "FERRY_DATA_DIR": "", "XDG_DATA_HOME": "/home/me/.data", "XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/me",
        ])
        #expect(paths.dataDirectory.path == "/home/me/.data/ferry")
        #expect(paths.runtimeDirectory.path == "/run/user/1000/ferry")
    }

    @Test func thenHomeAndTmp() throws {
        // Relative XDG paths are ignored, as the XDG spec says; empty ones too.
        let paths = try FerryPaths(environment: ["XDG_DATA_HOME": "relative/share", "XDG_RUNTIME_DIR": "", "HOME": "/home/me"])
        #expect(paths.dataDirectory.path == "/home/me/.local/share/ferry")
        #expect(paths.runtimeDirectory.path == "/tmp/ferry-\(getuid())")
    }

    @Test func withoutHomeThePasswordEntryIsUsed() throws {
        let paths = try FerryPaths(environment: [:])
        let entry = try #require(getpwuid(getuid()))
        #expect(paths.dataDirectory.path == String(cString: entry.pointee.pw_dir) + "/.local/share/ferry")
    }

    @Test func relativeFerryPathsAreFromTheCurrentDirectory() throws {
        let paths = try FerryPaths(environment: ["FERRY_DATA_DIR": "data", "FERRY_RUNTIME_DIR": "run"])
        let here = FileManager.default.currentDirectoryPath
        #expect(paths.dataDirectory.path == URL(fileURLWithPath: here).appendingPathComponent("data").standardizedFileURL.path)
    }

    @Test func prepareCreatesBothPrivate() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let paths = try FerryPaths(environment: [
            "FERRY_DATA_DIR": sandbox.url("deep/data").path, "FERRY_RUNTIME_DIR": sandbox.url("run/ferry").path,
        ])
        try paths.prepare()
        #expect(mode(paths.runtimeDirectory.path) == 0o700)
        #expect(mode(paths.dataDirectory.path) == 0o700)
        try paths.prepare()  // again: already there and right
    }

    @Test func symlinkedRuntimeDirectoryIsRefused() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let target = sandbox.url("elsewhere")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createSymbolicLink(at: sandbox.url("run"), withDestinationURL: target)
        let paths = FerryPaths(dataDirectory: sandbox.url("data"), runtimeDirectory: sandbox.url("run"))
        let error = #expect(throws: FerryPathsError.self) { try paths.prepare() }
        #expect(error?.description.contains("symbolic link") == true)
        #expect(error?.description.contains(sandbox.url("run").path) == true)
    }

    @Test func openRuntimeDirectoryIsRefusedNotRepaired() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let run = sandbox.url("run")
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        chmod(run.path, 0o755)
        let paths = FerryPaths(dataDirectory: sandbox.url("data"), runtimeDirectory: run)
        let error = #expect(throws: FerryPathsError.self) { try paths.prepare() }
        #expect(error?.description.contains("open to other users (mode 755)") == true)
        #expect(error?.description.contains("chmod 700") == true)
        #expect(mode(run.path) == 0o755)
    }

    @Test func foreignRuntimeDirectoryIsRefused() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let run: URL
        if getuid() == 0 {
            // As root, make one that belongs to nobody.
            run = sandbox.url("run")
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
            chmod(run.path, 0o700)
            #expect(chown(run.path, 65534, 65534) == 0)
        } else {
            // Anyone else: /var/empty-like folders owned by root. `/` always is.
            run = URL(fileURLWithPath: "/")
        }
        let paths = FerryPaths(dataDirectory: sandbox.url("data"), runtimeDirectory: run)
        let error = #expect(throws: FerryPathsError.self) { try paths.prepare() }
        #expect(error?.description.contains("not to you") == true, "\(String(describing: error))")
    }

    @Test func aFileWhereTheRuntimeDirectoryGoesIsRefused() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("", to: "run", mode: 0o600)
        let paths = FerryPaths(dataDirectory: sandbox.url("data"), runtimeDirectory: sandbox.url("run"))
        let error = #expect(throws: FerryPathsError.self) { try paths.prepare() }
        #expect(error?.description.contains("not a directory") == true)
    }

    @Test func aSymlinkedDataDirectoryIsAccepted() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let disk = sandbox.url("big-disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: sandbox.url("data"), withDestinationURL: disk)
        let paths = FerryPaths(dataDirectory: sandbox.url("data"), runtimeDirectory: sandbox.url("run"))
        try paths.prepare()
        #expect(mode(paths.runtimeDirectory.path) == 0o700)
    }
}
