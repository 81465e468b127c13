import Ferry
import FerryTestSupport
import Foundation
import Testing

/// An upload body made from `Data` is written into the session's container for ferryd; it
/// is Ferry's file, deleted when the task ends, while a file the app named is never touched.
extension BackgroundSessionTests {
    /// The `.body` files under the harness's data folder (where session containers live).
    static func spooledBodies(_ daemon: DaemonHarness) -> [String] {
        let files = FileManager.default.enumerator(atPath: daemon.dataDirectory.path)?.allObjects as? [String] ?? []
        return files.filter { $0.hasSuffix(".body") }
    }

    @Test("a body spooled from Data is deleted when its upload completes; the app's own file is kept")
    func spooledBodyDeletedOnCompletion() async throws {
        try await withDaemonAndServer { daemon, server in
            let session = try Session.background(daemon.configuration("bg.spool.done"))
            let fromData = session.uploadTask(with: Request(url: server.url("/upload/d"), method: "PUT"), from: Data(TestContent.bytes(count: 100_000, seed: 5)))
            fromData.resume()
            // resume() returned: the body is on disk for ferryd.
            #expect(Self.spooledBodies(daemon).count == 1, "the Data body is spooled before resume() returns")
            let file = try makeTemporaryDirectory().appendingPathComponent("mine.bin")
            try Data(TestContent.bytes(count: 50_000, seed: 6)).write(to: file)
            let fromFile = session.uploadTask(with: Request(url: server.url("/upload/f"), method: "PUT"), fromFile: file)
            fromFile.resume()
            await fromData.waitUntilCompleted()
            await fromFile.waitUntilCompleted()
            #expect(fromData.error == nil && fromFile.error == nil)
            // ferryd deletes the body once the completion is committed, which is also when the
            // completion leaves for the app: the deletion may come a moment after the delegate call.
            try await poll(until: "ferryd to delete the spooled body", timeout: .seconds(5), observed: "\(Self.spooledBodies(daemon))") {
                Self.spooledBodies(daemon).isEmpty
            }
            #expect(FileManager.default.fileExists(atPath: file.path), "the app's own upload file must stay")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a body spooled from Data is deleted when its upload is cancelled")
    func spooledBodyDeletedOnCancel() async throws {
        try await withDaemonAndServer { daemon, server in
            let session = try Session.background(daemon.configuration("bg.spool.cancel"))
            // Every attempt is cut after 1,000 bytes: the task stays in ferryd, retrying.
            let task = session.uploadTask(
                with: Request(url: server.url("/upload/cut?dropAfter=1000"), method: "PUT"), from: Data(TestContent.bytes(count: 100_000, seed: 7)))
            task.resume()
            #expect(Self.spooledBodies(daemon).count == 1)
            try await poll(until: "an upload request at the server", timeout: .seconds(10), observed: "\(server.requests.map(\.path))") {
                server.requests.contains { $0.path.hasPrefix("/upload/cut") }
            }
            task.cancel()
            await task.waitUntilCompleted()
            #expect(task.error?.code == .cancelled)
            try await poll(until: "ferryd to delete the spooled body", timeout: .seconds(5), observed: "\(Self.spooledBodies(daemon))") {
                Self.spooledBodies(daemon).isEmpty
            }
            session.finishTasksAndInvalidate()
        }
    }
}
