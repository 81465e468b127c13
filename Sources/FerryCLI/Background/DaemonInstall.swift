import ArgumentParser
import FerryApps
import FerryDaemonClient
import Foundation

/// `ferry daemon install`: writes the systemd user units (`SystemdUnits`) and, where a user
/// systemd runs, enables and starts them; says what it did either way.
struct DaemonInstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Write systemd user units for ferryd (socket activation, restart after a crash) and enable them.",
        discussion: """
            Writes ferryd.socket and ferryd.service to the user unit folder. Where a user systemd \
            runs, a running ferryd is stopped, the units are enabled and started: a client's first \
            connection starts ferryd, a crash restarts it, and it starts at login, so queued \
            transfers resume without any client. Elsewhere the units are only written, and \
            clients keep starting ferryd on demand.
            """)

    @Option(name: .long, help: "The ferryd program the units run (default: $FERRYD_PATH, else ferryd beside ferry, else on $PATH).")
    var ferryd: String?

    @Option(name: .long, help: "Where to write the units (default: $XDG_CONFIG_HOME/systemd/user, else ~/.config/systemd/user).")
    var unitsDirectory: String?

    @Flag(name: .long, help: "Only write the units; do not enable or start them.")
    var noEnable = false

    @Flag(name: .long, help: "Print JSON on standard output, for scripts.")
    var json = false

    func run() throws {
        do {
            let paths = try DaemonAccess.paths()
            let endpoint = paths.endpoint(startsDaemon: false)
            guard let program = (ferryd ?? endpoint.resolvedDaemonExecutable()).map({ URL(fileURLWithPath: $0).standardizedFileURL.path }),
                FileManager.default.isExecutableFile(atPath: program)
            else {
                throw CLIFailure(exitStatus: ExitStatus.failure, code: "noDaemonProgram",
                                 message: "no ferryd program found: pass --ferryd PATH, set FERRYD_PATH, or put ferryd beside ferry or on PATH")
            }
            let folder = URL(fileURLWithPath: unitsDirectory ?? UserSystemd.unitsDirectory(), isDirectory: true)
            let units = SystemdUnits(ferryd: program, paths: paths)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            var written: [URL] = []
            for (name, text) in [(SystemdUnits.socketName, units.socket), (SystemdUnits.serviceName, units.service)] {
                let url = folder.appendingPathComponent(name)
                try text.write(to: url, atomically: true, encoding: .utf8)
                written.append(url)
            }

            var enabled = false
            var note: String
            if noEnable {
                note = "not enabled (--no-enable)"
            } else if let manager = UserSystemd.unavailableReason() {
                note = "not enabled: \(manager); clients start ferryd on demand meanwhile"
            } else {
                // A ferryd started on demand holds the socket path; it stops first (its tasks
                // stay in the store), then systemd owns the socket.
                if let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
                    UserSystemd.run(["ferry", "daemon", "stop"], program: me)
                }
                try UserSystemd.systemctl(["daemon-reload"])
                try UserSystemd.systemctl(["enable", "--now", SystemdUnits.socketName, SystemdUnits.serviceName])
                enabled = true
                note = "enabled and started: ferryd.socket and ferryd.service"
            }
            if json {
                JSONOutput.print(InstallReport(units: written.map(\.path), ferryd: program, socket: paths.socketURL.path, enabled: enabled, note: note))
            } else {
                for url in written { Console.out("wrote \(url.path)") }
                Console.out("ferryd \(program), socket \(paths.socketURL.path)")
                Console.out(note)
                if !enabled, !noEnable {
                    Console.out("to enable them where a user systemd runs: systemctl --user daemon-reload && systemctl --user enable --now ferryd.socket ferryd.service")
                }
            }
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: json)
        } catch {
            throw CLIFailure(exitStatus: ExitStatus.failure, code: "install", message: "\(error)").report(url: nil, json: json)
        }
    }

    struct InstallReport: Encodable {
        var units: [String]
        var ferryd: String
        var socket: String
        var enabled: Bool
        var note: String
    }
}

/// `ferry daemon uninstall`: disables (where a user systemd runs) and removes the units.
struct DaemonUninstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall", abstract: "Disable and remove ferryd's systemd user units; clients start ferryd on demand again.")

    @Option(name: .long, help: "Where the units are (default: $XDG_CONFIG_HOME/systemd/user, else ~/.config/systemd/user).")
    var unitsDirectory: String?

    func run() throws {
        let folder = URL(fileURLWithPath: unitsDirectory ?? UserSystemd.unitsDirectory(), isDirectory: true)
        if UserSystemd.unavailableReason() == nil {
            try? UserSystemd.systemctl(["disable", "--now", SystemdUnits.serviceName, SystemdUnits.socketName])
        }
        for name in [SystemdUnits.socketName, SystemdUnits.serviceName] {
            let url = folder.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: url.path) else { continue }
            // Only what `install` wrote: a unit of the same name written by hand stays.
            guard let text = try? String(contentsOf: url, encoding: .utf8), text.hasPrefix(SystemdUnits.header) else {
                Console.out("kept \(url.path): not written by ferry daemon install")
                continue
            }
            try FileManager.default.removeItem(at: url)
            Console.out("removed \(url.path)")
        }
        if UserSystemd.unavailableReason() == nil { try? UserSystemd.systemctl(["daemon-reload"]) }
    }
}

/// The user's systemd manager, through `systemctl --user`.
enum UserSystemd {
    static func unitsDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config").path
        return config + "/systemd/user"
    }

    /// Why no user systemd can take the units, or nil when one runs.
    static func unavailableReason() -> String? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemctl") || FileManager.default.isExecutableFile(atPath: "/bin/systemctl") else {
            return "systemctl is not installed"
        }
        let (status, output) = run(["systemctl", "--user", "is-system-running"])
        let state = output.trimmingCharacters(in: .whitespacesAndNewlines)
        // running, degraded, starting… all mean a manager answers; offline means none does.
        if state.isEmpty || state == "offline" || state.hasPrefix("Failed") {
            return "no user systemd runs here (systemctl --user is-system-running: \(state.isEmpty ? "status \(status)" : state))"
        }
        return nil
    }

    static func systemctl(_ arguments: [String]) throws {
        let (status, output) = run(["systemctl", "--user"] + arguments)
        guard status == 0 else {
            throw CLIFailure(exitStatus: ExitStatus.failure, code: "systemctl",
                             message: "systemctl --user \(arguments.joined(separator: " ")) failed (\(status)): \(output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    /// Runs a program found on PATH (or `program`), returning its status and output.
    @discardableResult
    static func run(_ words: [String], program: String? = nil) -> (status: Int32, output: String) {
        let process = Process()
        if let program {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = Array(words.dropFirst())
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = words
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return (-1, "\(error)")
        }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
