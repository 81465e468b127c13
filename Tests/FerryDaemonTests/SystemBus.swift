import FerryTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private system bus for one test: the real `dbus-daemon`, with a policy that lets every
/// connection own, send and receive anything, listening on a socket in a folder of its own.
/// Point a program at it with `DBUS_SYSTEM_BUS_ADDRESS` (``address``). Needs dbus-daemon
/// (`scripts/install-deps`); busctl comes with systemd.
final class SystemBus: Sendable {
    let root: URL
    let process: SpawnedProcess
    /// Where it listens: a socket in ``root``, or an abstract name.
    let address: String

    private init(root: URL, process: SpawnedProcess, address: String) {
        self.root = root
        self.process = process
        self.address = address
    }

    /// A name no other bus has (`ferry-bus-<pid>x…`, which `NetworkManagerLab.sweepLeftovers` knows).
    static func uniqueName() -> String { "ferry-bus-\(getpid())x\(UUID().uuidString.prefix(8))" }

    /// Starts dbus-daemon and waits (≤ 10 s) until its socket accepts connections: a socket
    /// file in a folder of its own, or the abstract name `abstract` (see ``uniqueName()``).
    static func start(abstract: String? = nil) async throws -> SystemBus {
        let folder = abstract ?? uniqueName()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(folder)
        let address = abstract.map { "unix:abstract=\($0)" } ?? "unix:path=\(root.appendingPathComponent("bus").path)"
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let configuration = root.appendingPathComponent("bus.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*"/>
                <allow receive_sender="*"/>
              </policy>
            </busconfig>
            """.write(to: configuration, atomically: true, encoding: .utf8)
        guard let daemon = ["/usr/bin/dbus-daemon", "/bin/dbus-daemon"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw SpawnError(message: "no dbus-daemon: run scripts/install-deps")
        }
        let process = try SpawnedProcess.start(
            daemon, ["--config-file=\(configuration.path)", "--nofork", "--nopidfile"], log: root.appendingPathComponent("bus.log"))
        let bus = SystemBus(root: root, process: process, address: address)
        do {
            try await poll(until: "dbus-daemon to listen on \(address)", timeout: .seconds(10), every: .milliseconds(20),
                           observed: "its output: \(process.output)") {
                guard process.isRunning else { throw SpawnError(message: "dbus-daemon exited: \(process.output)") }
                return (try? bus.busctl(["list", "--no-pager"])) != nil
            }
        } catch {
            bus.stop()
            throw error
        }
        return bus
    }

    func stop() {
        process.kill()
        try? FileManager.default.removeItem(at: root)
    }

    /// Runs busctl on this bus with `arguments`; its output (it must succeed).
    func busctl(_ arguments: [String]) throws -> String {
        try Self.run("/usr/bin/busctl", ["--address=\(address)"] + arguments)
    }

    /// Runs `program` (a command that answers within seconds) and returns its standard output;
    /// fails with its error output when it fails.
    static func run(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SpawnError(message: "\(program) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(problem)")
        }
        return text
    }
}
