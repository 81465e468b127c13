import FerryCore
import Foundation
import GRDB
@testable import FerryStore
import Testing

/// Migration v7: where a download is delivered, where it was, and sessions that keep no events.
@Suite("Delivery columns (v7)")
struct DeliveryColumnsTests {
    @Test("a download's deliverTo and deliveredTo are stored and read back by a new store")
    func deliverToRoundTrip() async throws {
        try await withStore { (store, path) async throws in
            var task = download("big.iso")
            task.deliverTo = "/home/me/big.iso"
            let stored = try await store.submit(task).task
            try await store.updateTask(session: "s", task: stored.taskIdentifier) { record in
                record.state = .completed
                record.deliveredTo = "/home/me/big (1).iso"
            }
            try store.close()
            let again = try FerryStore(path: path)
            defer { try? again.close() }
            let read = try #require(try await again.task(session: "s", task: stored.taskIdentifier))
            #expect(read.deliverTo == "/home/me/big.iso")
            #expect(read.deliveredTo == "/home/me/big (1).iso")
        }
    }

    @Test("a relative deliverTo is refused by the schema")
    func relativeRefused() async throws {
        try await withStore { (store, _) async throws in
            var task = download("big.iso")
            task.deliverTo = "big.iso"
            await #expect(throws: FerryStoreError.self) { try await store.submit(task) }
        }
    }

    @Test("v7 makes the `ferry` CLI's existing sessions ones that keep no events; other sessions keep theirs")
    func migratesCLISessions() async throws {
        let rows = """
            INSERT INTO session (identifier, app_bundle_identifier, created_at) VALUES
                ('ferry.cli', 'unregistered.ferry-cli', 0), ('nightly', 'unregistered.script', 0), ('photos.bg', 'com.example.photos', 0)
            """
        try await withStore(migratedUpTo: "v5", rows: rows) { (store) async throws in
            #expect(try await store.session("ferry.cli")?.keepsEvents == false)
            #expect(try await store.session("nightly")?.keepsEvents == true)
            #expect(try await store.session("photos.bg")?.keepsEvents == true)
        }
    }
}
