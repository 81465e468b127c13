import FerryCore
import Foundation
import GRDB
@testable import FerryStore
import Testing

/// Migration v14: the task table's checks of `state` and `kind` as comparisons instead of `IN`
/// lists, which SQLite 3.40 evaluated through a temporary index on every insert and state change.
@Suite("State and kind checks (v14)")
struct StateChecksTests {
    @Test("a store made before v14 keeps its tasks and events; states and kinds outside the lists are still refused")
    func migratesAndStillRefuses() async throws {
        let rows = """
            INSERT INTO session (identifier, app_bundle_identifier, created_at) VALUES ('s', 'com.example.app', 0);
            INSERT INTO task (session_identifier, task_identifier, kind, state, url, method, created_at, updated_at)
                VALUES ('s', 1, 'download', 'waiting', 'https://example.com/a', 'GET', 0, 0),
                       ('s', 2, 'data', 'completed', 'https://example.com/b', 'GET', 0, 0);
            INSERT INTO event (session_identifier, task_identifier, kind, payload, created_at)
                VALUES ('s', 2, 'completed', '{"type":"completed"}', 0);
            """
        try await withStore(migratedUpTo: "v13", rows: rows) { (store) async throws in
            let declaration = try #require(try await store.scalarForTest("SELECT sql FROM sqlite_master WHERE name = 'task'"))
            #expect(!declaration.contains("state IN ("), "the state check is comparisons now")
            #expect(!declaration.contains("kind IN ("), "the kind check is comparisons now")
            #expect(try await store.scalarForTest("PRAGMA integrity_check") == "ok")
            #expect(try await store.task(session: "s", task: 1)?.state == .waiting)
            #expect(try await store.task(session: "s", task: 2)?.state == .completed)
            #expect(try await store.undeliveredEvents(in: "s").map(\.kind) == ["completed"], "the migration keeps events (no cascade)")

            for (sql, what) in [
                ("UPDATE task SET state = 'finished' WHERE task_identifier = 1", "a state outside the list"),
                ("UPDATE task SET kind = 'stream' WHERE task_identifier = 1", "a kind outside the list"),
                ("UPDATE task SET state = NULL WHERE task_identifier = 1", "no state"),
            ] {
                await #expect(throws: (any Error).self, "\(what) is refused") { try await store.executeForTest(sql) }
            }
            for state in TaskState.allCases {
                try await store.executeForTest("UPDATE task SET state = '\(state.rawValue)' WHERE task_identifier = 1")
            }
            for kind in TaskKind.allCases where kind != .upload {
                try await store.executeForTest("UPDATE task SET kind = '\(kind.rawValue)' WHERE task_identifier = 1")
            }
        }
    }
}
