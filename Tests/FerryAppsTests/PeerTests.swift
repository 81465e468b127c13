// SO_PEERCRED and /proc: credentials of real sockets, and which app a real process is.
import FerryApps
import FerryTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct PeerTests {
    @Test func socketPairPeerIsThisProcess() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0)
        defer { descriptors.forEach { close($0) } }
        let peer = try PeerCredentials.of(socket: descriptors[0])
        #expect(peer == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
    }

    @Test func notASocketIsAnError() throws {
        let descriptor = open("/dev/null", O_RDONLY)
        defer { close(descriptor) }
        let error = #expect(throws: PeerCredentialsError.self) { try PeerCredentials.of(socket: descriptor) }
        #expect(error?.errno == ENOTSOCK)
    }

    @Test func childConnectingToAUnixSocketIsIdentified() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // The app is a Python script: /proc/PID/exe is python, the script is in cmdline.
        let script = try sandbox.write(
            """
            #!/usr/bin/python3
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            s.sendall(b"hello")
            time.sleep(30)
            """, to: "opt/pyapp/bin/pyapp")
        let manifest = AppManifest(bundleIdentifier: "com.example.pyapp", name: "PyApp", executables: [script], launch: [script])
        try sandbox.registry.install(manifest)

        let socketPath = sandbox.url("s.sock").path
        let listener = try listen(at: socketPath)
        defer { close(listener) }
        let child = try Child(script, [socketPath])
        defer { child.stop() }

        let connection = try await accept(listener)
        defer { close(connection) }
        let peer = try PeerCredentials.of(socket: connection)
        #expect(peer.pid == child.pid)
        #expect(peer.uid == getuid())
        #expect(peer.gid == getgid())
        #expect(executablePath(ofProcess: peer.pid)?.hasPrefix("/usr/bin/python3") == true)
        #expect(try sandbox.registry.identify(pid: peer.pid) == .app(manifest))
    }

    @Test func childRunningAListedBinaryIsItsApp() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let manifest = try shareAlike(in: sandbox)
        try sandbox.registry.install(manifest)

        let app = try Child(manifest.executables[0], ["30"])
        defer { app.stop() }
        let share = try Child(manifest.extensions[0].executables[0], ["30"])
        defer { share.stop() }
        let other = try Child("/usr/bin/sleep", ["30"])
        defer { other.stop() }

        // Until exec has happened, /proc/PID/exe may still be the parent's program.
        try await waitForExec(app.pid, manifest.executables[0])
        try await waitForExec(share.pid, manifest.extensions[0].executables[0])
        #expect(try sandbox.registry.identify(pid: app.pid) == .app(manifest))
        let extensionPeer = try sandbox.registry.identify(pid: share.pid)
        #expect(extensionPeer == .appExtension(manifest.extensions[0], containingApp: manifest))
        #expect(extensionPeer.appGroups == manifest.appGroups)
        try await waitForExec(other.pid, "/usr/bin/sleep")
        #expect(try sandbox.registry.identify(pid: other.pid) == .unregistered(executable: "/usr/bin/sleep"))
    }

    @Test func shellScriptsAreIdentifiedByAbsoluteOrRelativePath() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // Not `sleep` last: dash execs a script's last simple command in place, and the process
        // would then be `sleep` (exe and cmdline), no longer the script (a flaky failure under load).
        let script = try sandbox.write("#!/bin/sh -e\nsleep 30\ntrue\n", to: "opt/shapp/bin/shapp")
        let manifest = AppManifest(bundleIdentifier: "com.example.shapp", name: "ShApp", executables: [script], launch: [script])
        try sandbox.registry.install(manifest)

        let absolute = try Child(script, [])
        defer { absolute.stop() }
        // A script started by a relative path: resolved against /proc/PID/cwd.
        let relative = try Child("/bin/sh", ["-c", "cd '\(sandbox.url("opt/shapp").path)' && exec /bin/sh ./bin/shapp"])
        defer { relative.stop() }
        try await waitForExec(absolute.pid, "/usr/bin/dash")
        // The kernel switches /proc/PID/exe to the interpreter before it writes the new command
        // line: until then the arguments read empty and only the interpreter is seen.
        try await poll(until: "the script's command line after its exec", every: .milliseconds(10)) {
            FileManager.default.contents(atPath: "/proc/\(absolute.pid)/cmdline") == Data("/bin/sh\0-e\0\(script)\0".utf8)
        }
        // The `sh -c` before its exec has the same /proc/PID/exe: wait for the exec'd cmdline.
        try await poll(until: "the `sh -c` to exec ./bin/shapp", every: .milliseconds(10)) {
            FileManager.default.contents(atPath: "/proc/\(relative.pid)/cmdline") == Data("/bin/sh\0./bin/shapp\0".utf8)
        }
        // What the process looked like, for a failure under load (seen once in a parallel run).
        func seen(_ pid: Int32) -> String {
            let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? "?"
            let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { String(decoding: $0, as: UTF8.self) } ?? "?"
            return "exe \(exe), cmdline \(cmdline.debugDescription)"
        }
        let byAbsolutePath = try sandbox.registry.identify(pid: absolute.pid)
        #expect(byAbsolutePath == .app(manifest), "identified as \(byAbsolutePath); \(seen(absolute.pid))")
        let byRelativePath = try sandbox.registry.identify(pid: relative.pid)
        #expect(byRelativePath == .app(manifest), "identified as \(byRelativePath); \(seen(relative.pid))")
    }

    @Test func aListedBinaryAsAnArgumentIsNotTheApp() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let manifest = try shareAlike(in: sandbox)
        try sandbox.registry.install(manifest)
        // `tail -f /opt/…/sharealike`: the app's binary is an argument, not the program.
        let reader = try Child("/usr/bin/tail", ["-f", manifest.executables[0]])
        defer { reader.stop() }
        try await waitForExec(reader.pid, "/usr/bin/tail")
        #expect(try sandbox.registry.identify(pid: reader.pid) == .unregistered(executable: "/usr/bin/tail"))
    }

    @Test func anAppReplacedWhileRunningIsStillItself() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let manifest = try shareAlike(in: sandbox)
        try sandbox.registry.install(manifest)
        let app = try Child(manifest.executables[0], ["30"])
        defer { app.stop() }
        try await waitForExec(app.pid, manifest.executables[0])
        // An update in place: the running program's file is unlinked and a new one put there.
        try FileManager.default.removeItem(atPath: manifest.executables[0])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(app.pid)/exe").hasSuffix(" (deleted)"))
        #expect(executablePath(ofProcess: app.pid) == manifest.executables[0])
        _ = try sandbox.program("opt/sharealike/bin/sharealike")
        #expect(try sandbox.registry.identify(pid: app.pid) == .app(manifest))
    }

    @Test func aGoneProcessHasNoExecutable() async throws {
        let child = try Child("/usr/bin/true", [])
        #expect(try await child.exitStatus() == 0)
        #expect(executablePath(ofProcess: child.pid) == nil)
        #expect(executablePath(ofProcess: -1) == nil)
        #expect(executablePath(ofProcess: getpid()) == CommandLine.arguments.first.flatMap { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path })
    }

    // MARK: Sockets

    func listen(at path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(descriptor >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind: \(String(cString: strerror(errno)))")
        try #require(Glibc.listen(descriptor, 4) == 0)
        return descriptor
    }

    /// Accepts one connection, polling (non-blocking) for at most 10 s.
    func accept(_ listener: Int32) async throws -> Int32 {
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        return try await eventually("a connection to the listening socket", every: .milliseconds(10)) { () throws -> Int32? in
            let connection = Glibc.accept(listener, nil, nil)
            if connection >= 0 { return connection }
            try #require(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return nil
        }
    }
}
