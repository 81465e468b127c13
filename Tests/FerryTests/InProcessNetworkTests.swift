import Ferry
import FerryTestSupport
import Foundation
import Testing

/// In-process transfers and the network: `ferry get` (the engine, and `--many` through a
/// `Session`) runs inside the client namespace of a ``NetworkLab`` whose link the test takes
/// down and up, and whose link the test names expensive (`FERRYD_EXPENSIVE_INTERFACES`).
@Suite("In-process sessions and the network", .serialized)
struct InProcessNetworkTests {
    @Test("no network and no waiting: notConnectedToInternet at once, nothing sent")
    func failsAtOnceWithoutNetwork() async throws {
        let lab = try NetworkLab.make()
        defer { lab.remove() }
        try Data(TestContent.bytes(count: 1000, seed: 2)).write(to: lab.www.appendingPathComponent("a.bin"))
        try await lab.startServer()
        try lab.setLink(up: false)
        let out = lab.root.appendingPathComponent("a.bin")
        // With an option (the monitor judges it before connecting) and without (the socket's ENETUNREACH).
        for options in [["--no-cellular"], []] {
            let run = try await ferry(lab, ["get", lab.url("/a.bin"), "-o", out.path, "--json"] + options)
            #expect(run.status == 7, "\(options): \(run.output)")
            #expect(run.output.contains("\"code\":\"notConnectedToInternet\""), "\(options): \(run.output)")
            #expect(run.output.contains(options.isEmpty ? "no route to" : "no link that is up has a route"), "\(options): \(run.output)")
        }
        #expect(lab.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    @Test("--wait-for-network: says once that it waits, and downloads when the link is back")
    func waitsForTheLink() async throws {
        let lab = try NetworkLab.make()
        defer { lab.remove() }
        let content = Data(TestContent.bytes(count: 200_000, seed: 3))
        try content.write(to: lab.www.appendingPathComponent("b.bin"))
        try await lab.startServer()
        try lab.setLink(up: false)
        let out = lab.root.appendingPathComponent("b.bin")
        let log = lab.root.appendingPathComponent("get.log")
        let get = try spawnFerry(lab, ["get", lab.url("/b.bin"), "-o", out.path, "--wait-for-network"], log: log)
        defer { get.kill() }
        try await poll(until: "ferry get to say it waits for the network", timeout: .seconds(10), observed: "its output: \(get.output)") {
            get.output.contains("waiting for the network")
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(get.isRunning, "it waits rather than failing: \(get.output)")
        #expect(lab.requests.isEmpty)
        try lab.setLink(up: true)
        let status = try await get.exit(within: .seconds(15))
        #expect(status == 0, "\(get.output)")
        #expect(try Data(contentsOf: out) == content)
        #expect(get.output.components(separatedBy: "waiting for the network").count == 2, "told once: \(get.output)")
    }

    @Test("an expensive link the options rule out: notConnectedToInternet at once, or a wait bounded by --max-time")
    func expensiveLink() async throws {
        let lab = try NetworkLab.make()
        defer { lab.remove() }
        try Data(TestContent.bytes(count: 1000, seed: 4)).write(to: lab.www.appendingPathComponent("c.bin"))
        try await lab.startServer()
        let environment = ["FERRYD_EXPENSIVE_INTERFACES": lab.clientLink, "FERRYD_NETWORK_MANAGER": "off"]
        let out = lab.root.appendingPathComponent("c.bin")
        let refused = try await ferry(lab, ["get", lab.url("/c.bin"), "-o", out.path, "--no-expensive-network", "--json"], environment: environment)
        #expect(refused.status == 7, "\(refused.output)")
        #expect(refused.output.contains("\"code\":\"notConnectedToInternet\""), "\(refused.output)")
        #expect(refused.output.contains("expensive link \(lab.clientLink)"), "\(refused.output)")
        let waited = try await ferry(
            lab, ["get", lab.url("/c.bin"), "-o", out.path, "--no-expensive-network", "--wait-for-network", "--max-time", "1", "--json"],
            environment: environment)
        #expect(waited.status == 28, "\(waited.output)")
        #expect(waited.output.contains("\"code\":\"timedOut\""), "\(waited.output)")
        #expect(waited.output.contains("waited for connectivity"), "\(waited.output)")
        #expect(lab.requests.isEmpty, "nothing went over the expensive link")
        // Allowed, the same link carries it.
        let allowed = try await ferry(lab, ["get", lab.url("/c.bin"), "-o", out.path, "--json"], environment: environment)
        #expect(allowed.status == 0, "\(allowed.output)")
        #expect(lab.requests.count == 1)
    }

    @Test("a Session's tasks wait: the delegate's taskIsWaitingForConnectivity once per task, then every file")
    func sessionTasksWait() async throws {
        let lab = try NetworkLab.make()
        defer { lab.remove() }
        var urls: [String] = []
        for index in 0..<3 {
            try Data(TestContent.bytes(count: 5000, seed: UInt64(10 + index))).write(to: lab.www.appendingPathComponent("f\(index).bin"))
            urls.append(lab.url("/f\(index).bin"))
        }
        try await lab.startServer()
        try lab.setLink(up: false)
        let list = lab.root.appendingPathComponent("list.txt")
        try urls.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let folder = lab.root.appendingPathComponent("many")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let log = lab.root.appendingPathComponent("many.log")
        let get = try spawnFerry(lab, ["get", "--many", list.path, "--dir", folder.path, "--wait-for-network"], log: log)
        defer { get.kill() }
        try await poll(until: "each of the 3 tasks to say it waits for the network", timeout: .seconds(10), observed: "the output: \(get.output)") {
            get.output.components(separatedBy: "waiting for the network").count == 4
        }
        #expect(lab.requests.isEmpty)
        try lab.setLink(up: true)
        let status = try await get.exit(within: .seconds(15))
        #expect(status == 0, "\(get.output)")
        for index in 0..<3 {
            #expect(try Data(contentsOf: folder.appendingPathComponent("f\(index).bin")) == Data(TestContent.bytes(count: 5000, seed: UInt64(10 + index))))
        }
        #expect(get.output.components(separatedBy: "waiting for the network").count == 4, "once per task: \(get.output)")
    }

    @Test("a running transfer whose link goes down ends within 2 s with networkConnectionLost (not at its request time-out), through the engine and through a Session")
    func linkDownMidTransfer() async throws {
        let lab = try NetworkLab.make()
        defer { lab.remove() }
        try Data(TestContent.bytes(count: 1 << 20, seed: 5)).write(to: lab.www.appendingPathComponent("slow.bin"))
        try await lab.startServer()
        try lab.limitServerRate(bytesPerSecond: 128 << 10)  // 8 s for the file
        let list = lab.root.appendingPathComponent("list.txt")
        try lab.url("/slow.bin").write(to: list, atomically: true, encoding: .utf8)
        let folder = lab.root.appendingPathComponent("many")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // --no-cellular: the session asks about the network, so its gate follows the route.
        let ways: [(name: String, arguments: [String])] = [
            ("ferry get", ["get", lab.url("/slow.bin"), "-o", lab.root.appendingPathComponent("slow.bin").path, "--no-cellular", "--json"]),
            ("a Session", ["get", "--many", list.path, "--dir", folder.path, "--no-batch", "--no-cellular"]),
        ]
        for (round, way) in ways.enumerated() {
            let get = try spawnFerry(lab, way.arguments, log: lab.root.appendingPathComponent("get-\(round).log"))
            defer { get.kill() }
            try await poll(until: "the web server to answer \(way.name)'s request", timeout: .seconds(10), every: .milliseconds(20),
                           observed: "its log: \(lab.requests.suffix(3)); ferry: \(get.output)") {
                lab.requests.filter { $0.contains("GET /slow.bin ") }.count > round
            }
            try await Task.sleep(for: .milliseconds(500))  // bytes are flowing
            #expect(get.isRunning, "\(way.name): \(get.output)")
            let down = ContinuousClock.now
            try lab.setLink(up: false)
            let status = try await get.exit(within: .seconds(5))
            let took = ContinuousClock.now - down
            #expect(took < .seconds(2), "\(way.name) ended \(took) after its link went down")
            #expect(status != 0, "\(way.name): \(get.output)")
            #expect(get.output.contains("the network link \(lab.clientLink) went down"), "\(way.name): \(get.output)")
            try lab.setLink(up: true)
        }
    }

    /// `ferry args…` started inside the lab's client namespace.
    private func spawnFerry(_ lab: NetworkLab, _ arguments: [String], environment: [String: String] = [:], log: URL) throws -> SpawnedProcess {
        let command = lab.inClient([try BuiltProducts.path(of: "ferry")] + arguments)
        return try SpawnedProcess.start(command[0], Array(command.dropFirst()), environment: environment, log: log)
    }

    /// `ferry args…` inside the lab's client namespace, to its end.
    private func ferry(_ lab: NetworkLab, _ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        let process = try spawnFerry(lab, arguments, environment: environment, log: lab.root.appendingPathComponent("ferry-\(UUID().uuidString.prefix(8)).log"))
        let status = try await process.exit(within: .seconds(30))
        return (status, process.output)
    }
}
