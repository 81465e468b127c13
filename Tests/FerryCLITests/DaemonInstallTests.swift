import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ferry daemon install|uninstall`: the systemd user units, and ferryd run from them with a
/// socket systemd passes (`systemd-socket-activate`, systemd's own tool, since this machine
/// runs no user systemd manager).
@Suite("ferry daemon install", .serialized, .timeLimit(.minutes(2)))
struct DaemonInstallTests {
    struct Setup {
        let scratch = try! Scratch()
        var units: String { scratch.path("units") }
        var environment: [String: String] {
            ["FERRY_DATA_DIR": scratch.path("data"), "FERRY_RUNTIME_DIR": scratch.path("run"),
             "FERRYD_PATH": (try? BuiltProducts.path(of: "ferryd")) ?? "ferryd"]
        }
        func run(_ args: [String], timeout: Double = 30) async throws -> FerryRun {
            try await FerryBinary.run(args, in: scratch.url, timeout: timeout, environment: environment)
        }
        func unit(_ name: String) throws -> String {
            try String(contentsOfFile: units + "/" + name, encoding: .utf8)
        }
    }

    /// Whether a user systemd manager answers here (then install would enable the units).
    static var userSystemdRuns: Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/systemctl")
        process.arguments = ["--user", "is-system-running"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        let state = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return !["", "offline"].contains(state.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("install writes a socket unit and a restarting service for this user's folders and says what it did; uninstall removes only what it wrote")
    func unitsAreWritten() async throws {
        let setup = Setup()
        defer { setup.scratch.remove() }
        // Never enable units in a real user manager from a test.
        let enableFlag = Self.userSystemdRuns ? ["--no-enable"] : []
        let install = try await setup.run(["daemon", "install", "--units-directory", setup.units, "--json"] + enableFlag)
        #expect(install.status == 0, "\(install.stderr)")
        let report = try #require(install.json)
        #expect(report["enabled"] as? Bool == false)
        let note = report["note"] as? String ?? ""
        #expect(enableFlag.isEmpty ? note.contains("no user systemd runs here") : note.contains("--no-enable"), "\(note)")

        let socketPath = setup.scratch.path("run") + "/ferryd.sock"
        let socket = try setup.unit("ferryd.socket")
        #expect(socket.contains("ListenStream=\(socketPath)\n"))
        #expect(socket.contains("SocketMode=0600"))
        #expect(socket.contains("WantedBy=sockets.target"))
        let service = try setup.unit("ferryd.service")
        let ferryd = try BuiltProducts.path(of: "ferryd")
        #expect(service.contains("ExecStart=\(ferryd) --runtime-directory \(setup.scratch.path("run")) --data-directory \(setup.scratch.path("data"))\n"))
        #expect(service.contains("Restart=on-failure"))
        #expect(service.contains("Requires=ferryd.socket"))
        #expect(service.contains("WantedBy=default.target"))

        let human = try await setup.run(["daemon", "install", "--units-directory", setup.units, "--no-enable"])
        #expect(human.stdout.contains("wrote \(setup.units)/ferryd.socket"))
        #expect(human.stdout.contains("not enabled (--no-enable)"))

        // A unit of the same name that install did not write is kept.
        try "[Unit]\nDescription=mine\n".write(toFile: setup.units + "/ferryd.socket", atomically: true, encoding: .utf8)
        let uninstall = try await setup.run(["daemon", "uninstall", "--units-directory", setup.units])
        #expect(uninstall.status == 0)
        #expect(uninstall.stdout.contains("removed \(setup.units)/ferryd.service"))
        #expect(uninstall.stdout.contains("kept \(setup.units)/ferryd.socket"))
        #expect(!FileManager.default.fileExists(atPath: setup.units + "/ferryd.service"))
        #expect(FileManager.default.fileExists(atPath: setup.units + "/ferryd.socket"))
    }

    @Test("the service's command under socket activation: a client's first connection starts ferryd on systemd's socket, it serves, and `daemon stop` ends it with status 0")
    func socketActivation() async throws {
        let setup = Setup()
        defer { setup.scratch.remove() }
        let install = try await setup.run(["daemon", "install", "--units-directory", setup.units, "--no-enable"])
        #expect(install.status == 0, "\(install.stderr)")
        let execStart = try #require(try setup.unit("ferryd.service").split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let command = execStart.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        let socketPath = setup.scratch.path("run") + "/ferryd.sock"
        // Not Foundation's Process: systemd-socket-activate execs ferryd (see SpawnedProcess).
        let activator = try SpawnedProcess.start(
            "/usr/bin/systemd-socket-activate", ["-l", socketPath] + command, environment: setup.environment,
            log: setup.scratch.url.appendingPathComponent("activator.log"))
        defer { activator.kill() }
        try await poll(until: "systemd-socket-activate to listen on \(socketPath)", timeout: .seconds(10), observed: activator.output) {
            FileManager.default.fileExists(atPath: socketPath)
        }
        // The first connection makes systemd-socket-activate exec ferryd with the socket.
        let status = try await setup.run(["daemon", "status", "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.json?["pid"] as? Int == Int(activator.pid), "ferryd is not the activated process")

        let server = try await TestHTTPServer.start()
        let download = try await setup.run(["download", server.baseURL + "/bytes/100000?seed=2", "--wait", "-o", "out.bin"])
        try await server.shutdown()
        #expect(download.status == 0, "\(download.stderr)")
        #expect(try Data(contentsOf: setup.scratch.url.appendingPathComponent("out.bin")) == Data(TestContent.bytes(count: 100_000, seed: 2)))

        let stop = try await setup.run(["daemon", "stop"])
        #expect(stop.status == 0 && stop.stdout.contains("ferryd stopped"), "\(stop.stdout) \(stop.stderr)")
        // Restart=on-failure restarts a crash, not this.
        #expect(try await activator.exit(within: .seconds(15)) == 0, "\(activator.output.suffix(2000))")
        #expect(activator.output.contains("listening on the socket systemd passed"))
    }
}
