import Foundation
@testable import FerryStore
import Testing

@Suite("Opening a store")
struct OpeningTests {
    @Test("a new file is migrated: tables, WAL journal, a sync per commit, foreign keys on, migration recorded")
    func migratesEmptyFile() async throws {
        try await withTemporaryDirectory { (directory) async throws in
            let path = directory.appendingPathComponent("new.sqlite").path
            let store = try FerryStore(path: path)
            defer { try? store.close() }
            #expect(try await store.sessions().isEmpty)
            #expect(try await store.scalarForTest("PRAGMA journal_mode") == "wal")
            #expect(try await store.scalarForTest("PRAGMA foreign_keys") == "1")
            #expect(try await store.scalarForTest("SELECT group_concat(identifier) FROM grdb_migrations") == Schema.migrations.map(\.0).joined(separator: ","))
            #expect(try await store.writerScalarForTest("PRAGMA synchronous") == "2", "FULL: every commit is synced")
            #expect(try await store.writerScalarForTest("PRAGMA temp_store") == "2", "MEMORY: savepoint journals are not files")
            let tables = try await store.scalarForTest(
                "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('session','task','event') ORDER BY name)")
            #expect(tables == "event,session,task")
        }
    }

    @Test("an existing empty (0-byte) file is a new database")
    func emptyFile() async throws {
        try await withTemporaryDirectory { (directory) async throws in
            let path = directory.appendingPathComponent("empty.sqlite").path
            #expect(FileManager.default.createFile(atPath: path, contents: Data()))
            let store = try FerryStore(path: path)
            defer { try? store.close() }
            #expect(try await store.scalarForTest("PRAGMA journal_mode") == "wal")
        }
    }

    @Test("reopening a migrated file runs no migration again and keeps WAL")
    func reopen() async throws {
        try await withStore { (store, path) async throws in
            try store.close()
            let again = try FerryStore(path: path)
            defer { try? again.close() }
            #expect(try await again.scalarForTest("SELECT count(*) FROM grdb_migrations") == "\(Schema.migrations.count)")
            #expect(try await again.scalarForTest("PRAGMA journal_mode") == "wal")
            #expect(try await again.session("s")?.appBundleIdentifier == "com.example.app")
        }
    }

    static let foreignFiles: [(String, Data)] = {
        var random = SplitMix(seed: 7)
        let noise = Data((0..<4_096).map { _ in UInt8.random(in: 0...255, using: &random) })
        var sqliteHeaderThenNoise = Data("SQLite format 3\0".utf8)
        sqliteHeaderThenNoise.append(noise.prefix(4_080))
        return [
            ("random bytes", noise),
            ("a text file", Data("these are my notes, not a database\n".utf8)),
            ("a short file", Data([0x53, 0x51])),
            ("a SQLite header over garbage", sqliteHeaderThenNoise),
        ]
    }()

    @Test("a file that is not a SQLite database is refused with a clear error and left untouched", arguments: foreignFiles)
    func foreignFile(_ name: String, _ contents: Data) async throws {
        try await withTemporaryDirectory { (directory) async throws in
            let path = directory.appendingPathComponent("ferryd.sqlite").path
            try contents.write(to: URL(fileURLWithPath: path))
            let error = #expect(throws: FerryStoreError.self) { try FerryStore(path: path) }
            #expect(error?.code == .notADatabase)
            #expect(error?.message.contains("Move it away") == true)
            #expect(error?.path == path)
            #expect(try fileBytes(path) == contents)
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
            // Still refused the second time: nothing was "repaired".
            #expect(throws: FerryStoreError.self) { try FerryStore(path: path) }
            #expect(try fileBytes(path) == contents)
        }
    }

    @Test("a missing folder is a cannotOpen error that says to check the folder")
    func missingFolder() async throws {
        try await withTemporaryDirectory { (directory) async throws in
            let path = directory.appendingPathComponent("no/such/folder/ferryd.sqlite").path
            let error = #expect(throws: FerryStoreError.self) { try FerryStore(path: path) }
            #expect(error?.code == .cannotOpen)
            #expect(error?.message.contains("folder") == true)
        }
    }

    @Test("a database written by a newer ferryd is refused and not changed")
    func tooNew() async throws {
        try await withStore { (store, path) async throws in
            try await store.executeForTest("INSERT INTO grdb_migrations (identifier) VALUES ('v99')")
            try store.close()
            let before = try fileBytes(path)
            let error = #expect(throws: FerryStoreError.self) { try FerryStore(path: path) }
            #expect(error?.code == .databaseTooNew)
            #expect(error?.message.contains("newer ferryd") == true)
            #expect(try fileBytes(path) == before)
        }
    }

    @Test("a closed store says so, to reads and to writes (a write that cannot begin fails, it is not tried again and again)",
          .timeLimit(.minutes(1)))
    func closed() async throws {
        try await withStore { (store, _) async throws in
            try store.close()
            let error = await #expect(throws: FerryStoreError.self) { try await store.sessions() }
            #expect(error?.code == .closed)
            let writeError = await #expect(throws: FerryStoreError.self) { try await store.openSession("late", appBundleIdentifier: "a") }
            #expect(writeError?.code == .closed, "\(String(describing: writeError))")
        }
    }

    @Test("grouped writes whose transaction cannot begin fail with its error, and are not tried again at once, forever",
          .timeLimit(.minutes(1)))
    func groupThatCannotBegin() async throws {
        try await withStore { (store, _) async throws in
            try store.pool.close()  // under the store: BEGIN fails for the writer
            let first = store.writes.enqueue({ _ in 1 }, durability: .synced, failure: { $0 })
            let second = store.writes.enqueue({ _ in 2 }, durability: .written, failure: { $0 })
            await #expect(throws: (any Error).self) { _ = try await first.value }
            await #expect(throws: (any Error).self) { _ = try await second.value }
        }
    }
}

/// SplitMix64, so the "random" file is the same on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
