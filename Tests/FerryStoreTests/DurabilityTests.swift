import Foundation
@testable import FerryStore
import Synchronization
import Testing

/// Which commits are synced to disk before their callers hear back (`Durability`), and that an
/// unsynced one reaches the database file with the next checkpoint even when nothing follows.
@Suite("Durability")
struct DurabilityTests {
    @Test("a write that needs no sync commits without one; a group holding one that needs it is synced")
    func syncedWhenOneAsks() async throws {
        try await withStore { (store, _) async throws in
            // SQLite's `synchronous` as each write's own transaction sees it: 2 FULL, 1 NORMAL.
            let level = "PRAGMA synchronous"
            #expect(try await store.write("read", durability: .written) { db in try Int.fetchOne(db, sql: level) } == 1)
            #expect(try await store.write("read", durability: .synced) { db in try Int.fetchOne(db, sql: level) } == 2)

            // A write holds the writer until both others wait: they share the next transaction.
            let started = Atomic(false)
            let release = DispatchSemaphore(value: 0)
            let holding = store.enqueueWrite("hold the writer") { _ in
                started.store(true, ordering: .sequentiallyConsistent)
                _ = release.wait(timeout: .now() + 10)
            }
            var waited = 0
            while !started.load(ordering: .sequentiallyConsistent) && waited < 500 {
                try await Task.sleep(for: .milliseconds(10))
                waited += 1
            }
            let didStart = started.load(ordering: .sequentiallyConsistent)
            try #require(didStart, "the first write did not start within 5 s")
            let unsynced = store.enqueueWrite("read", durability: .written) { db in try Int.fetchOne(db, sql: level) }
            let synced = store.enqueueWrite("read", durability: .synced) { db in try Int.fetchOne(db, sql: level) }
            release.signal()
            try await holding.value
            #expect(try await unsynced.value == 2, "a write that needs no sync, in a group with one that does, is synced with it")
            #expect(try await synced.value == 2)
            #expect(try await store.write("read", durability: .written) { db in try Int.fetchOne(db, sql: level) } == 1)
        }
    }

    @Test("an attempt's start, a progress save and an acknowledgement are not synced; a submission and a completion are")
    func whichWritesAreSynced() async throws {
        try await withStore { (store, _) async throws in
            let task = try await store.submit(download("a")).task.taskIdentifier
            #expect(store.writerSynchronousForTest() == 2, "after a submission")
            _ = try await store.startAttempt(session: "s", task: task)
            #expect(store.writerSynchronousForTest() == 1, "after an attempt's start")
            try await store.updateProgress(
                session: "s", task: task, bytesSent: 0, bytesReceived: 10, bytesExpectedToSend: nil, bytesExpectedToReceive: 20)
            #expect(store.writerSynchronousForTest() == 1, "after a progress save")
            try await store.completeTask(session: "s", task: task, TaskCompletion(responseStatus: 200, bytesSent: 0, bytesReceived: 20))
            #expect(store.writerSynchronousForTest() == 2, "after a completion")
            try await store.acknowledge(session: "s", upTo: 10)
            #expect(store.writerSynchronousForTest() == 1, "after an acknowledgement")
        }
    }

    @Test("a commit that nothing follows reaches the database file with a checkpoint within a second")
    func lastCommitCheckpointed() async throws {
        try await withStore { (store, path) async throws in
            // The first commit starts a checkpoint; the second comes within its interval.
            for index in 0..<5 { _ = try await store.submit(download("first-\(index)")) }
            _ = try await store.submit(all: (0..<300).map { download("second-\($0)") })
            let pageSize = try #require(Int(try await store.scalarForTest("PRAGMA page_size") ?? ""))
            let pages = try #require(Int(try await store.scalarForTest("PRAGMA page_count") ?? ""))
            var waited = 0
            while try fileSize(path) < pages * pageSize && waited < 100 {
                try await Task.sleep(for: .milliseconds(20))
                waited += 1
            }
            let size = try fileSize(path)
            #expect(size >= pages * pageSize, "the database file holds \(size) bytes 2 s after the last commit, its \(pages) pages \(pages * pageSize)")
        }
    }
}

extension FerryStore {
    /// SQLite's `synchronous` the last transaction ran with: 2 FULL, 1 NORMAL.
    fileprivate func writerSynchronousForTest() -> Int {
        writes.currentDurability == .synced ? 2 : 1
    }
}

private func fileSize(_ path: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
}
