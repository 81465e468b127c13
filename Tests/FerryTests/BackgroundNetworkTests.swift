import Ferry
import FerryTestSupport
import Foundation
import Testing

/// A background session whose ferryd runs in a network namespace with its link down
/// (``NetworkLab``): the delegate hears `taskIsWaitingForConnectivity` once, and the download
/// completes when the link comes back.
@Suite("Background sessions and the network", .serialized)
struct BackgroundNetworkTests {
    @Test("waitsForConnectivity: the delegate is told once that the task waits, and the download completes when the link is back")
    func waitsForConnectivity() async throws {
        let lab = try NetworkLab.make()
        defer { lab.remove() }
        let content = Data(TestContent.bytes(count: 300_000, seed: 11))
        try content.write(to: lab.www.appendingPathComponent("photo.jpg"))
        try await lab.startServer()
        try lab.setLink(up: false)
        let daemon = try DaemonHarness.prepare()
        defer { daemon.stop() }
        let wrapper = try ferrydInClientNamespace(lab, daemon)
        var configuration = daemon.configuration("bg.network")
        configuration.ferryEnvironment?["FERRYD_PATH"] = wrapper.path
        configuration.waitsForConnectivity = true

        let delegate = RecordingDelegate()
        delegate.keepCopyOfDownloadAt = lab.root.appendingPathComponent("kept.jpg")
        let session = try Session.background(configuration, delegate: delegate)
        let task = session.downloadTask(with: Request(url: URL(string: lab.url("/photo.jpg"))!))
        task.resume()
        try await poll(until: "the delegate to hear that task \(task.taskIdentifier) waits for connectivity", timeout: .seconds(10),
                       observed: "its calls: \(delegate.log)") {
            delegate.log.contains("waiting for connectivity \(task.taskIdentifier)")
        }
        #expect(lab.requests.isEmpty)
        try lab.setLink(up: true)
        #expect(succeeded(await delegate.nextCompletion()))
        #expect(try Data(contentsOf: lab.root.appendingPathComponent("kept.jpg")) == content)
        #expect(delegate.log.filter { $0.hasPrefix("waiting for connectivity") }.count == 1, "\(delegate.log)")
        #expect(daemon.runningDaemonPIDs().count == 1, "the library started the ferryd in the namespace")
        session.finishTasksAndInvalidate()
    }
}

extension BackgroundNetworkTests {
    @Test("ferry explain says a CLI download waits for the network, and ferry daemon status says the link is down")
    func explainSaysNoNetwork() async throws {
        let lab = try NetworkLab.make()
        defer { lab.remove() }
        try Data(TestContent.bytes(count: 1000, seed: 1)).write(to: lab.www.appendingPathComponent("a.bin"))
        try await lab.startServer()
        try lab.setLink(up: false)
        let daemon = try DaemonHarness.prepare()
        defer { daemon.stop() }
        let wrapper = try ferrydInClientNamespace(lab, daemon)
        let environment = daemon.environment.merging(["FERRYD_PATH": wrapper.path]) { $1 }
        let submitted = try await runFerry(["download", lab.url("/a.bin")], environment: environment)
        #expect(submitted.status == 0, "\(submitted.output)")
        let task = submitted.output.split(separator: "\n").first.map(String.init) ?? ""
        let explained = try await eventually("ferry explain to say task \(task) waits for the network", timeout: .seconds(10), every: .milliseconds(100)) {
            let explain = try await runFerry(["explain", task], environment: environment)
            return explain.output.contains("no network") ? explain.output : nil
        }
        #expect(explained.contains("no link that is up has a route to \(NetworkLab.farHost)"), "\(explained)")
        let status = try await runFerry(["daemon", "status"], environment: environment)
        #expect(status.output.contains("network: no default route; links up: none"), "\(status.output)")
    }

    /// A script for FERRYD_PATH that runs this build's ferryd in the lab's client namespace:
    /// the library and the CLI start ferryd through it.
    func ferrydInClientNamespace(_ lab: NetworkLab, _ daemon: DaemonHarness) throws -> URL {
        let wrapper = lab.root.appendingPathComponent("ferryd-in-namespace")
        try "#!/bin/sh\nexec \(lab.inClient([daemon.ferrydPath]).joined(separator: " ")) \"$@\"\n".write(to: wrapper, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: wrapper.path)
        return wrapper
    }

}
