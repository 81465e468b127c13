import FerryCore
@testable import FerryDaemon
@testable import FerryNetwork
import FerryProtocol
import FerryTestSupport
import Foundation
import Logging
import Testing

/// ferryd and the real NetworkManager (``NetworkManagerLab``): a connection made metered with
/// nmcli makes its link expensive, so a session that does not allow expensive links waits, and
/// its task starts within a second of `nmcli connection modify … connection.metered no`;
/// NetworkManager coming and going switches ferryd between its reading and the name patterns.
@Suite("NetworkManager's Metered", .serialized)
struct NetworkManagerTests {
    static func status(_ client: RawClient) async throws -> NetworkStatus? {
        guard case .status(let status) = try await client.request(.status) else { throw TestFailure("no status") }
        return status.network
    }

    /// Waits (≤ `timeout`) until ferryd's status says `source` and counts the lab's link expensive or not.
    static func waitForStatus(
        _ ferryd: FerrydProcess, link: String, source: String, expensive: Bool, timeout: Duration = .seconds(10)
    ) async throws {
        let client = try await RawClient.connected(to: ferryd.socketPath, name: "status")
        defer { client.close() }
        var last: NetworkStatus?
        try await poll(until: "ferryd's status to say \(source) with \(link) \(expensive ? "expensive" : "not expensive")",
                       timeout: timeout, every: .milliseconds(20),
                       observed: "\(String(describing: last)); ferryd's log:\n\(ferryd.log.suffix(2000))") {
            last = try await status(client)
            return last?.source == source && last?.links.first { $0.name == link }?.isExpensive == expensive
        }
    }

    /// Starts `ferryd` in the lab's client namespace with NetworkManager saying the lab's link
    /// is metered, and submits a download (of /file.bin?frugal) for a session that does not allow
    /// expensive links: that session's client, its task, and why the task waits.
    static func holdOnMeteredLink(
        _ manager: NetworkManagerLab, ferryd: FerrydProcess, seed: UInt64
    ) async throws -> (frugal: RawClient, held: Int, reason: WaitingReason) {
        let lab = manager.lab
        try Data(TestContent.bytes(count: NetworkTests.fileSize, seed: seed)).write(to: lab.www.appendingPathComponent("file.bin"))
        try manager.connect(metered: "yes")
        try await manager.waitForPublished(1)
        ferryd.wrapper = lab.inClient([])
        ferryd.extraEnvironment = ["DBUS_SYSTEM_BUS_ADDRESS": manager.bus.address]
        try await ferryd.start()
        try await Self.waitForStatus(ferryd, link: lab.clientLink, source: "netlink+networkmanager", expensive: true)
        let frugal = try await RawClient.connected(to: ferryd.socketPath, name: "frugal")
        try await NetworkTests.attach("frugal", NetworkAccess(allowsExpensiveNetworkAccess: false), on: frugal)
        let held = try await frugal.submit(.download("frugal", lab.url("/file.bin?frugal"))).taskIdentifier
        let reason = try await NetworkTests.waits("frugal", held, for: .expensiveNetwork, on: frugal, ferryd: ferryd)
        return (frugal, held, reason)
    }

    @Test("a task of a session that does not allow expensive links waits while NetworkManager says metered, and starts within a second of metered no")
    func meteredThenNot() async throws {
        let manager = try await NetworkManagerLab.make()
        let lab = manager.lab
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp(); manager.remove() }
        let (frugal, held, reason) = try await Self.holdOnMeteredLink(manager, ferryd: ferryd, seed: 7)
        #expect(reason.message.contains("\(lab.clientLink) (metered, says NetworkManager)"), "\(reason.message)")
        // A session that allows expensive links is not held on the same link.
        let other = try await ferryd.owner(of: "other")
        let runs = try await other.submit(.download("other", lab.url("/file.bin?other"))).taskIdentifier
        #expect(try await other.events(untilFinished: [runs], timeout: 30).of(runs).last?.kind == .completed)
        #expect(!lab.requests.contains { $0.contains("frugal") }, "the held task sent nothing")

        let seconds = try await NetworkTests.secondsUntilRequested("/file.bin?frugal", lab: lab) { try manager.setMetered("no") }
        #expect(seconds < 1.0, "the download started \(seconds) s after nmcli made the connection unmetered")
        print("NetworkManager: task started \(String(format: "%.3f", seconds)) s after nmcli connection modify … metered no")
        #expect(try await frugal.events(untilFinished: [held], timeout: 30).of(held).last?.kind == .completed)
        let finished = try await NetworkTests.task("frugal", held, on: frugal)
        #expect(finished.attemptCount == 1, "waiting used no attempt: \(finished)")
        try await Self.waitForStatus(ferryd, link: lab.clientLink, source: "netlink+networkmanager", expensive: false)
        #expect(ferryd.log.contains("NetworkManager: metered changed"), "\(ferryd.log.suffix(2000))")
    }

    @Test("NetworkManager restarting (stopped, then started again within the grace period) keeps a metered link expensive: a held task stays held")
    func restartWithinGrace() async throws {
        let manager = try await NetworkManagerLab.make()
        let lab = manager.lab
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp(); manager.remove() }
        let (frugal, held, _) = try await Self.holdOnMeteredLink(manager, ferryd: ferryd, seed: 8)

        try await manager.stop()
        try await poll(until: "ferryd to see NetworkManager leave", timeout: .seconds(10), every: .milliseconds(20),
                       observed: "ferryd's log:\n\(ferryd.log.suffix(2000))") {
            ferryd.log.contains("NetworkManager left the system bus: NetworkManager's last reading counts for 30 s more")
        }
        try await Task.sleep(for: .seconds(1))
        let client = try await RawClient.connected(to: ferryd.socketPath, name: "status")
        defer { client.close() }
        let meanwhile = try await Self.status(client)
        #expect(meanwhile?.source == "netlink+networkmanager" && meanwhile?.links.first { $0.name == lab.clientLink }?.isExpensive == true,
                "the last reading still counts: \(String(describing: meanwhile))")

        try await manager.start()
        try await manager.waitForPublished(1)
        try await poll(until: "ferryd to read NetworkManager again", timeout: .seconds(10), every: .milliseconds(20),
                       observed: "ferryd's log:\n\(ferryd.log.suffix(2000))") {
            ferryd.log.contains("NetworkManager is back")
        }
        try await Task.sleep(for: .seconds(1))
        try await Self.waitForStatus(ferryd, link: lab.clientLink, source: "netlink+networkmanager", expensive: true)
        #expect(try await NetworkTests.task("frugal", held, on: frugal).state == .waiting, "still held")
        #expect(!lab.requests.contains { $0.contains("frugal") }, "the held task sent nothing while NetworkManager restarted")
        // Read again once NetworkManager's Startup was over: its connection active, the link metered from the first reading on.
        let reading = ferryd.log.split(separator: "\n").last { $0.contains("NetworkManager: reading which links are metered") } ?? ""
        #expect(reading.contains("metered=\(lab.clientLink)"), "\(ferryd.log.suffix(2000))")
    }

    @Test("NetworkManager starting after ferryd is followed (its name appears on the bus), and stopping it returns ferryd to the name patterns after the grace period")
    func managerComesAndGoes() async throws {
        let manager = try await NetworkManagerLab.make(startingManager: false)
        let lab = manager.lab
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp(); manager.remove() }
        ferryd.wrapper = lab.inClient([])
        ferryd.extraEnvironment = ["DBUS_SYSTEM_BUS_ADDRESS": manager.bus.address]
        try await ferryd.start()
        try await Self.waitForStatus(ferryd, link: lab.clientLink, source: "netlink", expensive: false)
        #expect(ferryd.log.contains("no NetworkManager on the system bus"), "\(ferryd.log.suffix(2000))")

        try await manager.start()
        try manager.connect(metered: "yes")
        try await Self.waitForStatus(ferryd, link: lab.clientLink, source: "netlink+networkmanager", expensive: true)

        try await manager.stop()
        let stopped = ContinuousClock.now
        try await Self.waitForStatus(ferryd, link: lab.clientLink, source: "netlink", expensive: false, timeout: .seconds(45))
        #expect(ContinuousClock.now - stopped > .seconds(25), "not before the grace period's end")
        #expect(ferryd.log.contains("NetworkManager left the system bus: links are classed by their names alone"), "\(ferryd.log.suffix(2000))")
    }

    @Test("FERRYD_NETWORK_MANAGER=off: ferryd asks nobody, and a link NetworkManager says is metered is not expensive (the patterns alone)")
    func askedNotTo() async throws {
        let manager = try await NetworkManagerLab.make()
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp(); manager.remove() }
        try manager.connect(metered: "yes")
        try await manager.waitForPublished(1)
        ferryd.wrapper = manager.lab.inClient([])
        ferryd.extraEnvironment = ["DBUS_SYSTEM_BUS_ADDRESS": manager.bus.address, "FERRYD_NETWORK_MANAGER": "off"]
        try await ferryd.start()
        try await Self.waitForStatus(ferryd, link: manager.lab.clientLink, source: "netlink", expensive: false)
        #expect(!ferryd.log.contains("NetworkManager"), "\(ferryd.log.suffix(2000))")
    }

    @Test("the watch itself: nil without NetworkManager, then each Metered value NetworkManager publishes (yes, no, guess from unknown), then nil again")
    func watchFollowsEachValue() async throws {
        let manager = try await NetworkManagerLab.make(startingManager: false)
        defer { manager.remove() }
        let link = manager.lab.clientLink
        let watch = try #require(NetworkManagerWatch(address: manager.bus.address, grace: 3, logger: Logger(label: "test")))
        defer { watch.stop() }
        func expect(_ what: String, _ wanted: @escaping (NetworkManagerDevices?) -> Bool) async throws {
            try await poll(until: "the watch to see \(what)", timeout: .seconds(10), every: .milliseconds(10),
                           observed: "\(String(describing: watch.current)); NetworkManager's log:\n\(manager.log.suffix(1500))") {
                wanted(watch.current)
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(watch.current == nil, "no NetworkManager yet")
        try await manager.start()
        try await expect("\(link) known, not metered") { $0?.devices[link].map { !$0.metered.isMetered && !$0.isModem } == true }
        try manager.connect(metered: "yes")
        try await expect("\(link) metered yes") { $0?.devices[link]?.metered == .yes }
        try manager.setMetered("no")
        try await expect("\(link) metered no") { $0?.devices[link]?.metered == .no }
        try manager.setMetered("unknown")
        try await manager.waitForPublished(4)  // an ethernet link with nothing said: guess-no
        try await expect("\(link) metered guess-no") { $0?.devices[link]?.metered == .guessNo }
        try await manager.stop()
        let stopped = ContinuousClock.now
        #expect(watch.current?.devices[link]?.metered == .guessNo, "the last reading counts for the grace period")
        try await expect("NetworkManager gone (nil)") { $0 == nil }
        #expect(ContinuousClock.now - stopped > .seconds(2), "nil once the grace period (3 s) ended")
    }

    @Test("no bus yet: the watch connects within seconds of one appearing (again 1 s after a failure, doubling), not 10 s later")
    func busAppears() async throws {
        let name = SystemBus.uniqueName()
        let watch = try #require(NetworkManagerWatch(address: "unix:abstract=\(name)", logger: Logger(label: "test")))
        defer { watch.stop() }
        try await poll(until: "the watch's first attempt to fail", timeout: .seconds(5), every: .milliseconds(10)) {
            var news = [pollfd(fd: watch.changes, events: Int16(POLLIN), revents: 0)]  // told once after the first attempt
            return Glibc.poll(&news, 1, 0) == 1 && watch.current == nil
        }
        let bus = try await SystemBus.start(abstract: name)
        defer { bus.stop() }
        let appeared = ContinuousClock.now
        let connection = try DBusConnection(address: bus.address, timeout: 2)
        defer { connection.close() }
        try await poll(until: "the watch to connect to the bus", timeout: .seconds(15), every: .milliseconds(20)) {
            let names = try connection.call(.busCall("ListNames"), timeout: 2).body.first?.elements?.compactMap(\.string) ?? []
            return names.contains { name in
                name.hasPrefix(":") && name != connection.uniqueName
                    && (try? connection.call(.busCall("GetConnectionUnixProcessID", [.string(name)]), timeout: 2))?.body == [.uint32(UInt32(getpid()))]
            }
        }
        let waited = ContinuousClock.now - appeared
        #expect(waited < .seconds(5), "the watch connected \(waited) after the bus appeared")
    }

    @Test("a burst of devices (30 veth links made at once, a DeviceAdded each) is read a few times, not once per signal")
    func deviceBurst() async throws {
        let manager = try await NetworkManagerLab.make()
        defer { manager.remove() }
        let watch = try #require(NetworkManagerWatch(address: manager.bus.address, logger: Logger(label: "test")))
        defer { watch.stop() }
        let link = manager.lab.clientLink
        try await poll(until: "the watch to know \(link)", timeout: .seconds(10), every: .milliseconds(10)) { watch.current?.devices[link] != nil }
        let before = watch.readings
        let names = (0..<15).flatMap { ["fva\($0)", "fvb\($0)"] }  // no dummy links in a container without their module
        let batch = manager.lab.root.appendingPathComponent("veths")
        try (0..<15).map { "link add fva\($0) type veth peer name fvb\($0)\n" }.joined().write(to: batch, atomically: true, encoding: .utf8)
        let command = manager.lab.inClient(["ip", "-batch", batch.path])
        _ = try SystemBus.run(command[0], Array(command.dropFirst()))
        try await poll(until: "the watch to know the 30 links", timeout: .seconds(10), every: .milliseconds(10),
                       observed: "\(String(describing: watch.current))") {
            names.allSatisfy { watch.current?.devices[$0] != nil }
        }
        // The signals still waiting would each bring a reading if handled one by one: counted once quiet.
        try await poll(until: "the watch to be quiet for 1 s", timeout: .seconds(40), every: .milliseconds(1)) {
            let earlier = watch.readings
            try await Task.sleep(for: .seconds(1))
            return watch.readings == earlier
        }
        let readings = watch.readings - before
        print("NetworkManager: 30 devices added, read \(readings) times")
        #expect(readings <= 10, "one reading per burst of signals, not per signal: \(readings)")
    }

    @Test("NetworkManager's reading adds to the name patterns: metered and guess-yes are expensive, a modem is cellular, constrained stays the patterns'")
    func classification() {
        let path = NetworkPath(
            links: ["eth0": .init(name: "eth0", isUp: true, isLoopback: false), "eth1": .init(name: "eth1", isUp: true, isLoopback: false),
                    "wwan0": .init(name: "wwan0", isUp: true, isLoopback: false), "wlan0": .init(name: "wlan0", isUp: true, isLoopback: false)],
            routes: [])
        let devices = NetworkManagerDevices(devices: [
            "eth0": .init(metered: .yes, type: 1), "eth1": .init(metered: .guessNo, type: 1),
            "wwan0": .init(metered: .guessYes, type: NetworkManagerDevices.Device.modem), "wlan0": .init(metered: .no, type: 2),
        ])
        let classes = NetworkInterfaceClasses(cellular: [], expensive: ["wlan*"], constrained: ["wlan*"])
        let links = path.classified(by: classes, networkManager: devices).links
        #expect(links["eth0"]?.isExpensive == true && links["eth0"]?.isMeteredByNetworkManager == true && links["eth0"]?.isCellular == false)
        #expect(links["eth1"]?.isExpensive == false)
        #expect(links["wwan0"]?.isCellular == true && links["wwan0"]?.isExpensive == true)
        #expect(links["wlan0"]?.isExpensive == true && links["wlan0"]?.isConstrained == true, "a pattern is not undone by metered no")
        let without = path.classified(by: classes).links
        #expect(without["eth0"]?.isExpensive == false && without["wwan0"]?.isCellular == false)
        // A modem's control device and a plain device with its data link's name: metered and a modem.
        let merged = NetworkManagerDevices([
            ("wwan0", .init(metered: .unknown, type: 14)), ("wwan0", .init(metered: .guessYes, type: NetworkManagerDevices.Device.modem)),
            ("eth0", .init(metered: .no, type: 1)),
        ])
        #expect(merged.devices["wwan0"] == .init(metered: .guessYes, type: NetworkManagerDevices.Device.modem))
        #expect(merged.devices["eth0"]?.metered == .no)
        let reversed = NetworkManagerDevices([
            ("wwan0", .init(metered: .guessYes, type: NetworkManagerDevices.Device.modem)), ("wwan0", .init(metered: .unknown, type: 14)),
        ])
        #expect(reversed.devices["wwan0"] == .init(metered: .guessYes, type: NetworkManagerDevices.Device.modem), "in either order")
    }
}
