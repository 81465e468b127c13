import Foundation
@testable import FerryStore
import Testing

/// The log is copied into the database file beside the writer (`Checkpointer`), not inside
/// its commits.
@Suite("Checkpoints")
struct CheckpointTests {
    @Test("the writer never checkpoints; after commits the checkpointer copies the log into the database file")
    func besideTheWriter() async throws {
        try await withStore { (store, path) async throws in
            #expect(try await store.writerScalarForTest("PRAGMA wal_autocheckpoint") == "0", "the writer's commits do not checkpoint")
            let before = try fileSize(path)
            // Commits spaced wider than the interval: the later ones each start a checkpoint.
            var rounds = 0
            var grew = false
            while !grew && rounds < 50 {
                rounds += 1
                for index in 0..<20 { _ = try await store.submit(download("round-\(rounds)-\(index)")) }
                try await Task.sleep(for: .milliseconds(300))
                grew = try fileSize(path) > before
            }
            #expect(grew, "the database file did not grow in \(rounds) rounds of commits 300 ms apart: nothing checkpointed")
            #expect(try await store.tasks(in: "s").count == rounds * 20)
        }
    }

    @Test("closing waits for a running checkpoint; the store on the same file opens again with every task")
    func closeAndReopen() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("ferryd.sqlite").path
            let store = try FerryStore(path: path)
            _ = try await store.openSession("s", appBundleIdentifier: "com.example.app", sharedContainerIdentifier: nil)
            for index in 0..<200 { _ = try await store.submit(download("task-\(index)")) }
            try store.close()
            let again = try FerryStore(path: path)
            defer { try? again.close() }
            #expect(try await again.tasks(in: "s").count == 200)
        }
    }
}

private func fileSize(_ path: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
}
