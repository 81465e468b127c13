import FerryTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The real NetworkManager managing the client link of a ``NetworkLab``, on a private
/// ``SystemBus``: `NetworkManager --no-daemon` runs in the lab's client namespace, in a mount
/// namespace of its own (its run and state folders are the test's, kept from one start to the
/// next as a restart keeps them, so that it takes up the connections it had; `/sys` read-only, so that it
/// does not wait for udev, which no container runs, and manages the veth at once). Connections
/// are made and changed with nmcli and devices read with busctl, both on the private bus.
/// Needs root, iproute2, dbus-daemon and network-manager (`scripts/install-deps`).
final class NetworkManagerLab: @unchecked Sendable {  // used by one test at a time
    let lab: NetworkLab
    let bus: SystemBus
    let root: URL
    private(set) var process: SpawnedProcess?
    /// The connection the test makes on the client link.
    static let connection = "ferry-lab"

    private init(lab: NetworkLab, bus: SystemBus, root: URL) {
        (self.lab, self.bus, self.root) = (lab, bus, root)
    }

    /// A lab whose web server runs, a bus, and (unless `startingManager` is false) NetworkManager.
    static func make(startingManager: Bool = true) async throws -> NetworkManagerLab {
        sweepLeftovers()
        let lab = try NetworkLab.make()
        var bus: SystemBus?
        do {
            try await lab.startServer()
            bus = try await SystemBus.start()
            let root = lab.root.appendingPathComponent("nm")
            for folder in ["connections", "lib", "run", "conf.d"] {
                try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
            }
            try """
                [main]
                plugins=keyfile
                dns=none
                rc-manager=unmanaged
                systemd-resolved=false
                hostname-mode=none
                auth-polkit=false
                no-auto-default=*
                [keyfile]
                path=\(root.appendingPathComponent("connections").path)
                [logging]
                level=INFO
                """.write(to: root.appendingPathComponent("NetworkManager.conf"), atomically: true, encoding: .utf8)
            let manager = NetworkManagerLab(lab: lab, bus: bus!, root: root)
            if startingManager { try await manager.start() }
            return manager
        } catch {
            bus?.stop()
            lab.remove()
            throw error
        }
    }

    /// Starts NetworkManager and waits (≤ 10 s) until it manages the client link.
    func start() async throws {
        guard let program = ["/usr/sbin/NetworkManager", "/sbin/NetworkManager"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw SpawnError(message: "no NetworkManager: run scripts/install-deps")
        }
        let lib = root.appendingPathComponent("lib").path
        let script = """
            mkdir -p /run/NetworkManager /var/lib/NetworkManager && mount --bind "\(root.appendingPathComponent("run").path)" /run/NetworkManager \
            && mount --bind "\(lib)" /var/lib/NetworkManager && mount -o remount,ro /sys && exec "$0" "$@"
            """
        let command = lab.inClient([
            "unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, program, "--no-daemon", "--debug",
            "--config=\(root.appendingPathComponent("NetworkManager.conf").path)", "--config-dir=\(root.appendingPathComponent("conf.d").path)",
            "--system-config-dir=\(root.appendingPathComponent("conf.d").path)", "--state-file=\(lib)/NetworkManager.state",
            "--intern-config=\(lib)/NetworkManager-intern.conf",
        ])
        let process = try SpawnedProcess.start(
            command[0], Array(command.dropFirst()),
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address], log: root.appendingPathComponent("NetworkManager.log"), appending: true)
        self.process = process
        var states = ""
        try await poll(until: "NetworkManager to manage \(lab.clientLink)", timeout: .seconds(10), every: .milliseconds(50),
                       observed: "nmcli: \(states); its log:\n\(String(process.output.suffix(2000)))") {
            guard process.isRunning else { throw SpawnError(message: "NetworkManager exited: \(process.output.suffix(2000))") }
            states = (try? nmcli(["-t", "-f", "DEVICE,STATE", "device"])) ?? ""
            return states.split(separator: "\n").contains { $0.hasPrefix("\(lab.clientLink):") && !$0.hasSuffix(":unmanaged") }
        }
    }

    /// Ends NetworkManager (SIGTERM, as a service manager would) and waits (≤ 10 s) for it.
    func stop() async throws {
        guard let process else { return }
        kill(process.pid, SIGTERM)
        _ = try await process.exit(within: .seconds(10))
        self.process = nil
    }

    /// Runs nmcli on the lab's bus.
    @discardableResult
    func nmcli(_ arguments: [String]) throws -> String {
        try SystemBus.run("/usr/bin/nmcli", arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
    }

    /// Makes ``connection`` on the client link (the lab's address and gateway, `metered` as
    /// given: yes, no, unknown) and activates it.
    func connect(metered: String) throws {
        try nmcli([
            "connection", "add", "type", "ethernet", "ifname", lab.clientLink, "con-name", Self.connection,
            "ipv4.method", "manual", "ipv4.addresses", "10.200.0.2/24", "ipv4.gateway", NetworkLab.nearHost, "ipv6.method", "disabled",
            "connection.metered", metered,
        ])
        try nmcli(["connection", "up", Self.connection])
    }

    /// `nmcli connection modify … connection.metered <value>`.
    func setMetered(_ value: String) throws {
        try nmcli(["connection", "modify", Self.connection, "connection.metered", value])
    }

    /// The client link's `Metered` as NetworkManager publishes it on the bus (read with busctl):
    /// 0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no.
    func publishedMetered() throws -> UInt32? {
        let path = try nmcli(["-g", "GENERAL.DBUS-PATH", "device", "show", lab.clientLink]).trimmingCharacters(in: .whitespacesAndNewlines)
        let answer = try bus.busctl(["get-property", "org.freedesktop.NetworkManager", path, "org.freedesktop.NetworkManager.Device", "Metered"])
        return answer.split(separator: " ").last.flatMap { UInt32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Waits (≤ 10 s) until the bus shows the client link's `Metered` as `value`.
    func waitForPublished(_ value: UInt32) async throws {
        var last: UInt32?
        try await poll(until: "NetworkManager to publish Metered \(value) for \(lab.clientLink)", timeout: .seconds(10),
                       every: .milliseconds(20), observed: "last: \(String(describing: last))") {
            last = try? publishedMetered()
            return last == value
        }
    }

    /// NetworkManager's log so far.
    var log: String { process?.output ?? "" }

    /// Ends the NetworkManager and dbus-daemon processes that earlier runs of dead test
    /// processes left: those whose command line names a lab or bus folder of a pid that is gone
    /// (`ferry-netlab-<pid>x…`, `ferry-bus-<pid>x…`).
    static func sweepLeftovers() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return }
        for entry in entries {
            guard let pid = Int32(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let command = String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            guard command.contains("NetworkManager") || command.contains("dbus-daemon") else { continue }
            for marker in ["ferry-netlab-", "ferry-bus-"] {
                guard let range = command.range(of: marker), let owner = Int32(command[range.upperBound...].prefix { $0.isNumber }),
                    kill(owner, 0) != 0, errno == ESRCH
                else { continue }
                kill(pid, SIGKILL)
            }
        }
    }

    func remove() {
        if let process {
            kill(process.pid, SIGTERM)
            for _ in 0..<100 where process.isRunning { usleep(50_000) }
            process.kill()
        }
        bus.stop()
        lab.remove()
    }
}
