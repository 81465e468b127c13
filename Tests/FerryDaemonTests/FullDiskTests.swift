import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// A download that cannot be written (RLIMIT_FSIZE, as a full disk would) fails the task
/// with a clear error; the store and every other task are unharmed (real process).
@Suite("Full disk (real process)", .serialized)
struct FullDiskTests {
    @Test("a write past the file-size limit fails the task with cannotWriteToFile; the store stays intact across a restart")
    func fileSizeLimit() async throws {
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp() }
        // dash counts `ulimit -f` in 512-byte blocks: 8 MiB.
        ferryd.wrapper = ["/bin/sh", "-c", "ulimit -f 16384; exec \"$0\" \"$@\""]
        try await ferryd.start()
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.owner(of: "s")
        let big = try await client.submit(.download("s", server.baseURL + "/bytes/33554432?seed=2"))
        let small = try await client.submit(.download("s", server.baseURL + "/bytes/100000?seed=3"))
        let events = try await client.events(untilFinished: [big.taskIdentifier, small.taskIdentifier])
        guard case .failed(let failure) = events.of(big.taskIdentifier).last?.kind else {
            throw TestFailure("the big download did not fail: \(events.of(big.taskIdentifier))")
        }
        #expect(failure.code == "cannotWriteToFile")
        #expect(failure.message.contains("File too large") || failure.message.contains("disk is full"), "\(failure.message)")
        #expect(events.of(small.taskIdentifier).last?.kind == .completed)
        #expect(ferryd.process?.isRunning == true)

        // Restart without the limit: the store opens, the failure and its event are there.
        try await ferryd.terminate()
        ferryd.wrapper = []
        try await ferryd.start()
        let again = try await RawClient.connected(to: ferryd.socketPath, name: "app")
        guard case .attached(let attached) = try await again.request(.attach("s")) else { throw TestFailure("no attach") }
        #expect(attached.tasks.map(\.state) == [.failed, .completed])
        #expect(attached.tasks.first?.lastError?.code.rawValue == "cannotWriteToFile")
        let replayed = try await again.events(untilFinished: [big.taskIdentifier, small.taskIdentifier])
        #expect(replayed.map(\.sequence) == events.map(\.sequence))
        try await server.shutdown()
    }
}
