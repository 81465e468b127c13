import FerryCore
import Foundation
import GRDB
@testable import FerryStore

/// A fresh folder per test, removed afterwards.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("ferry-store-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

/// A store on a fresh file, with one session "s" (app "com.example.app") already open.
func withStore<T>(_ body: (FerryStore, String) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        let path = directory.appendingPathComponent("ferryd.sqlite").path
        let store = try FerryStore(path: path)
        defer { try? store.close() }
        _ = try await store.openSession("s", appBundleIdentifier: "com.example.app", sharedContainerIdentifier: "group.example")
        return try await body(store, path)
    }
}

/// A store on a file an older ferryd left: migrated up to `migration`, given `rows` (SQL) there,
/// then opened as a store, which runs the migrations after it.
func withStore<T>(migratedUpTo migration: String, rows: String, _ body: (FerryStore) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        let path = directory.appendingPathComponent("\(migration).sqlite").path
        let queue = try DatabaseQueue(path: path)
        try Schema.migrator.migrate(queue, upTo: migration)
        try await queue.write { db in try db.execute(sql: rows) }
        try queue.close()
        let store = try FerryStore(path: path)
        defer { try? store.close() }
        return try await body(store)
    }
}

let t0 = Date(timeIntervalSince1970: 1_795_000_000)

func download(_ name: String, session: String = "s", key: String? = nil, priority: Double = 0.5, begin: Date? = nil) -> NewTask {
    NewTask(
        sessionIdentifier: session,
        task: TaskDescription(
            kind: .download,
            request: TaskRequest(url: URL(string: "https://example.com/\(name)")!, headers: HeaderFields([("Accept", "*/*"), ("X-Tag", "a"), ("X-Tag", "b")])),
            options: TaskOptions(idempotencyKey: key, priority: priority, earliestBeginDate: begin, taskDescription: name)))
}

func event(_ task: Int?, _ kind: String, session: String = "s") -> NewEvent {
    NewEvent(sessionIdentifier: session, taskIdentifier: task, kind: kind, payload: #"{"type":"\#(kind)"}"#)
}

extension FerryStore {
    /// Raw SQL for tests that must go around the public API, the way a bug in ferryd would.
    func executeForTest(_ sql: String) async throws {
        try await write("run test SQL") { db in try db.execute(sql: sql) }
    }

    /// On the writer's connection (settings such as `synchronous` are per connection).
    func writerScalarForTest(_ sql: String) async throws -> String? {
        try await write("run test SQL") { db in try String.fetchOne(db, sql: sql) }
    }

    func scalarForTest(_ sql: String) async throws -> String? {
        try await read("run test SQL") { db in try String.fetchOne(db, sql: sql) }
    }
}

func fileBytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }
