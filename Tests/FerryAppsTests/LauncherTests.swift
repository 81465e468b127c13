// AppLauncher: a real script launched detached, what it was given, its log, no zombie.
import FerryApps
import FerryTestSupport
import Foundation
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct LauncherTests {
    /// A launched app that writes what it got into `report`, says something on stdout and
    /// stderr, and exits with 3.
    static let reportingScript = """
        #!/bin/sh
        report="$FERRY_DATA_DIR/../report"
        {
          printf 'argv:'; for a in "$@"; do printf ' [%s]' "$a"; done; echo
          echo "session: $FERRY_BACKGROUND_SESSION"
          echo "data: $FERRY_DATA_DIR"
          echo "runtime: $FERRY_RUNTIME_DIR"
          echo "systemd: [${LISTEN_FDS-unset}] [${NOTIFY_SOCKET-unset}]"
          echo "sid: $(cut -d' ' -f6 /proc/$$/stat) pid: $$"
          echo "stdin: $(readlink /proc/$$/fd/0)"
          echo "directory: $(pwd) home: $HOME"
          echo "ignored: $(grep SigIgn /proc/$$/status | cut -f2)"
          echo "blocked: $(grep SigBlk /proc/$$/status | cut -f2)"
          echo "fds: $(for f in /proc/$$/fd/*; do readlink "$f"; done | tr '\\n' ' ')"
        } > "$report.tmp"
        mv "$report.tmp" "$report"
        echo "to stdout"
        echo "to stderr" >&2
        exit 3
        """

    @Test func launchRunsTheCommandDetachedWithItsSession() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let script = try sandbox.write(Self.reportingScript, to: "opt/app/bin/app")
        let manifest = AppManifest(
            bundleIdentifier: "com.example.launched", name: "Launched", executables: [script],
            launch: [script, "--session={session}", "{session}", "plain arg"])
        // A descriptor without O_CLOEXEC, as a careless library in ferryd might leave: it
        // must not reach the app.
        let leaked = open(sandbox.url("leak-marker").path, O_WRONLY | O_CREAT, 0o600)
        defer { close(leaked) }
        // As under systemd socket activation: these are ferryd's and must not reach the app.
        setenv("LISTEN_FDS", "1", 1)
        setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1)
        defer {
            unsetenv("LISTEN_FDS")
            unsetenv("NOTIFY_SOCKET")
        }

        let (exits, exited) = AsyncStream.makeStream(of: AppLauncher.Termination.self)
        let launcher = AppLauncher(paths: sandbox.paths, logger: Logger(label: "test.launcher"))
        let pid = try launcher.launch(manifest, session: "com.example.launched.bg") { _, termination in
            exited.yield(termination)
            exited.finish()
        }
        #expect(pid > 0)

        var iterator = exits.makeAsyncIterator()
        #expect(await iterator.next() == .exited(3))
        let report = try #require(String(data: try Data(contentsOf: sandbox.url("report")), encoding: .utf8))
        #expect(report.contains("argv: [--session=com.example.launched.bg] [com.example.launched.bg] [plain arg]\n"))
        #expect(report.contains("session: com.example.launched.bg\n"))
        #expect(report.contains("data: \(sandbox.paths.dataDirectory.path)\n"))
        #expect(report.contains("runtime: \(sandbox.paths.runtimeDirectory.path)\n"))
        #expect(report.contains("systemd: [unset] [unset]\n"), "set in this process: \(report)")
        #expect(report.contains("sid: \(pid) pid: \(pid)\n"), "its own session: \(report)")
        #expect(report.contains("stdin: /dev/null\n"))
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "/"
        #expect(report.contains("directory: \(home) home: \(home)\n"), "\(report)")
        // Signals 1–31 at their defaults (32 and 33 are glibc's own, not ours to reset).
        let ignored = report.split(separator: "\n").first { $0.hasPrefix("ignored: ") }.flatMap { UInt64($0.dropFirst(9), radix: 16) }
        #expect(ignored.map { $0 & 0x7fff_ffff } == 0, "\(report)")
        #expect(report.contains("blocked: 0000000000000000\n"), "\(report)")
        #expect(!report.contains("leak-marker"), "\(report)")

        let log = sandbox.paths.logsDirectory.appendingPathComponent("com.example.launched.log")
        let logText = try String(contentsOf: log, encoding: .utf8)
        #expect(logText.contains("ferryd launches com.example.launched for session com.example.launched.bg"))
        #expect(logText.contains("to stdout\n"))
        #expect(logText.contains("to stderr\n"))
        #expect(mode(log.path) == 0o600)
        #expect(mode(sandbox.paths.logsDirectory.path) == 0o700)

        // Reaped: no zombie left in the process table.
        try await waitUntilReaped(pid)
    }

    @Test func theLogIsAppendedAcrossLaunches() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let script = try sandbox.write("#!/bin/sh\necho \"run $1\"\n", to: "opt/app/bin/app")
        let manifest = AppManifest(bundleIdentifier: "com.example.twice", name: "Twice", executables: [script], launch: [script, "{session}"])
        let launcher = AppLauncher(paths: sandbox.paths, logger: Logger(label: "test.launcher"))
        for session in ["first", "second"] {
            let pid = try launcher.launch(manifest, session: session)
            try await waitUntilReaped(pid)
        }
        let log = try String(contentsOf: sandbox.paths.logsDirectory.appendingPathComponent("com.example.twice.log"), encoding: .utf8)
        let runs = log.split(separator: "\n").filter { $0.hasPrefix("run ") }
        #expect(runs == ["run first", "run second"])
    }

    @Test func aMissingProgramIsAnErrorAndLogged() throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let missing = sandbox.url("opt/app/bin/gone").path
        let manifest = AppManifest(bundleIdentifier: "com.example.gone", name: "Gone", executables: [missing], launch: [missing])
        let launcher = AppLauncher(paths: sandbox.paths, logger: Logger(label: "test.launcher"))
        let error = #expect(throws: AppLaunchError.self) { try launcher.launch(manifest, session: "s") }
        #expect(error?.description.contains(missing) == true)
        #expect(error?.description.contains("No such file") == true)
        let log = try String(contentsOf: sandbox.paths.logsDirectory.appendingPathComponent("com.example.gone.log"), encoding: .utf8)
        #expect(log.contains("cannot start \(missing)"))
    }

    @Test func aKilledAppIsReportedAsSignalled() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let script = try sandbox.write("#!/bin/sh\nexec sleep 30\n", to: "opt/app/bin/app")
        let manifest = AppManifest(bundleIdentifier: "com.example.killed", name: "Killed", executables: [script], launch: [script])
        let (exits, exited) = AsyncStream.makeStream(of: AppLauncher.Termination.self)
        let launcher = AppLauncher(paths: sandbox.paths, logger: Logger(label: "test.launcher"))
        let pid = try launcher.launch(manifest, session: "s") { _, termination in exited.yield(termination) }
        kill(pid, SIGKILL)
        var iterator = exits.makeAsyncIterator()
        #expect(await iterator.next() == .signalled(SIGKILL))
        try await waitUntilReaped(pid)
    }
}
