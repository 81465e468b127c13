import FerryCore
import FerryDaemon
import FerryProtocol
import FerryStore
import FerryTestSupport
import Foundation
import Testing

/// When a running task's progress reaches the store: a download's resume point with its
/// first bytes, then every `progressPersistInterval` counted from those bytes, not from the start of
/// an attempt that waited for its answer (that cost every such task a write of its own just
/// before the one that completed it).
@Suite("Saving progress: a download's resume point at once, bytes on the interval from the first")
struct ProgressSavingTests {
    @Test("a download's answer stores its validator at once, long before the interval")
    func resumePointAtOnce() async throws {
        let ferryd = try await InProcessDaemon { $0.progressPersistInterval = 60 }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        // ~8 s of body: the resume point must be stored while it flows, not with the completion
        // (6 s to see it: in a loaded parallel round, 3 s of a 4 s body once did not suffice
        // for the task to start).
        let task = try await client.submit(.download("s", server.baseURL + "/bytes/2000000?seed=4&drip=250000"))
        try await poll(until: "the download's validator is stored while it runs", timeout: .seconds(6)) {
            try await ferryd.task("s", task.taskIdentifier).resumeValidator != nil
        }
        let running = try await ferryd.task("s", task.taskIdentifier)
        #expect(running.state == .running)
        #expect(running.resumeValidator == "\"2000000-4-0\"")
        #expect(running.bytesExpectedToReceive == 2_000_000)
        _ = try await client.events(untilFinished: [task.taskIdentifier])
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a download killed right after its first bytes can resume: they are saved with the validator, not 100 ms later; one with at most 1 MiB left is not")
    func resumePointWithFirstBytes() async throws {
        let ferryd = try await InProcessDaemon { $0.progressPersistInterval = 60 }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        // 1,000 bytes with the head, then nothing for 5 s: the engine's progress reports were
        // coalesced to one per 100 ms from the transfer's start, so these first bytes went
        // unreported (and the resume point unsaved) until the stall ended; a ferryd killed in
        // a transfer's first 100 ms (CI's kill -9 test did it three times in four) fetched the
        // file from byte 0 again, every time.
        let large = try await client.submit(.download("s", server.baseURL + "/bytes/2000000?seed=5&stallAfter=1000&stallSeconds=5"))
        // The same with 400,000 bytes: fetching them again costs less than a write per download.
        let small = try await client.submit(.download("s", server.baseURL + "/bytes/400000?seed=6&stallAfter=1000&stallSeconds=5"))
        try await poll(until: "the first bytes' resume point is stored during the stall", timeout: .seconds(3)) {
            try await ferryd.task("s", large.taskIdentifier).resumeValidator != nil
        }
        let running = try await ferryd.task("s", large.taskIdentifier)
        #expect(running.state == .running)
        #expect(running.resumeOffset == 1000)
        #expect(running.bytesReceived == 1000)
        try await Task.sleep(for: .milliseconds(300))
        let smallRecord = try await ferryd.task("s", small.taskIdentifier)
        #expect(smallRecord.state == .running)
        #expect(smallRecord.resumeValidator == nil)
        #expect(smallRecord.bytesReceived == 0)
        _ = try await client.events(untilFinished: [large.taskIdentifier, small.taskIdentifier])
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a data task whose answer took longer than the interval is not saved on its first bytes")
    func noWriteOnFirstBytes() async throws {
        let ferryd = try await InProcessDaemon { $0.progressPersistInterval = 1 }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        // The head at once, then 1.5 s before the first byte (past the interval since the
        // attempt started), then 100 KB over about a second.
        let task = try await client.submit(TaskSubmission(
            sessionIdentifier: "s", kind: .data,
            request: TaskRequest(url: URL(string: server.baseURL + "/bytes/100000?stallAfter=0&stallSeconds=1.5&drip=100000")!)))
        _ = try await client.pushes(timeout: 20) { message in
            if case .progress(let progress) = message { return progress.bytesReceived > 0 }
            return false
        }
        // Live progress went out; the store keeps the attempt's start until a second of bytes
        // has passed (the old rule wrote here, within a few milliseconds).
        try await Task.sleep(for: .milliseconds(300))
        let record = try await ferryd.task("s", task.taskIdentifier)
        #expect(record.state == .running)
        #expect(record.bytesReceived == 0)
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        #expect(events.contains { $0.kind.name == "completed" })
        #expect(try await ferryd.task("s", task.taskIdentifier).bytesReceived == 100_000)
        try await server.shutdown()
        await ferryd.shutdown()
    }

    @Test("a download saves nothing before its first byte, nor when its first bytes are the whole body: its completion does")
    func smallDownloadSavedOnce() async throws {
        let ferryd = try await InProcessDaemon { $0.progressPersistInterval = 1 }
        let server = try await TestHTTPServer.start()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        // The head at once (10 bytes announced), then 1.5 s before the body, all of it at once:
        // past the interval, with a report at the head and one with the whole body.
        let task = try await client.submit(.download("s", server.baseURL + "/bytes/10?stallAfter=0&stallSeconds=1.5"))
        _ = try await client.pushes(timeout: 20) { message in
            if case .progress(let progress) = message { return progress.bytesExpectedToReceive == 10 }
            return false
        }
        // The head was reported live; the store still has the attempt's start (the old rule
        // saved the "resumed at 0" report here).
        try await Task.sleep(for: .milliseconds(300))
        let running = try await ferryd.task("s", task.taskIdentifier)
        #expect(running.state == .running)
        #expect(running.bytesExpectedToReceive == nil)
        #expect(running.resumeValidator == nil)
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        #expect(events.contains { $0.kind.name == "completed" })
        let done = try await ferryd.task("s", task.taskIdentifier)
        #expect(done.bytesReceived == 10)
        #expect(done.bytesExpectedToReceive == 10)
        try await server.shutdown()
        await ferryd.shutdown()
    }
}
