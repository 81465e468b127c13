import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// How ferryd ends: on purpose (a `stop` request, SIGTERM) it exits 0, so a supervisor's
/// `Restart=on-failure` does not take it for a crash.
@Suite("Stopping ferryd (real process)", .serialized)
struct StopTests {
    @Test("a stop request: ferryd answers, stops and exits with status 0")
    func stopRequestExitsZero() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let client = try await RawClient.connected(to: ferryd.socketPath, name: "cli")
        guard case .stopping = try await client.request(.stop) else { throw TestFailure("stop was not answered with stopping") }
        let status = try await ferryd.exitStatus()
        #expect(status == 0, "ferryd's log:\n\(ferryd.log.suffix(1500))")
    }

    @Test("SIGTERM: ferryd stops and exits with status 0")
    func sigtermExitsZero() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let status = try await ferryd.terminate()
        #expect(status == 0, "ferryd's log:\n\(ferryd.log.suffix(1500))")
    }

    /// The socket is bound before the services run; a supervisor may send SIGTERM as soon as
    /// it appears (it was once a kill with status 143 in that moment).
    @Test("SIGTERM the moment the socket appears: ferryd exits with status 0", arguments: 1...6)
    func sigtermWhileStarting(round: Int) async throws {
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp() }
        let process = try ferryd.launch()
        try await poll(until: "ferryd's socket \(ferryd.socketPath) to appear", timeout: .seconds(15), every: .milliseconds(1), observed: "its log:\n\(ferryd.log.suffix(3000))") {
            if FileManager.default.fileExists(atPath: ferryd.socketPath) { return true }
            guard process.isRunning else { throw TestFailure("ferryd exited at start:\n\(ferryd.log)") }
            return false
        }
        let status = try await ferryd.terminate()
        #expect(status == 0, "round \(round); ferryd's log:\n\(ferryd.log.suffix(1500))")
    }
}
