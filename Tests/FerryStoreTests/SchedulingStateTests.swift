import FerryCore
import Foundation
@testable import FerryStore
import Testing

@Suite("Scheduling state: time-outs, retry reasons, connection limits, counts")
struct SchedulingStateTests {
    @Test("time-outs and the retry reason survive reopening")
    func timeoutsAndRetryReason() async throws {
        try await withTemporaryDirectory { (directory) async throws in
            let path = directory.appendingPathComponent("ferryd.sqlite").path
            do {
                let store = try FerryStore(path: path)
                defer { try? store.close() }
                _ = try await store.openSession("s", appBundleIdentifier: "com.example.app")
                var task = download("a")
                task.timeoutIntervalForResource = 3_600
                task.timeoutIntervalForRequest = 30
                let submitted = try await store.submit(task, now: t0).task
                #expect(submitted.timeoutIntervalForResource == 3_600 && submitted.timeoutIntervalForRequest == 30 && submitted.retryReason == nil)
                _ = try await store.updateState(session: "s", task: 1, to: .running, now: t0)
                try await store.scheduleRetry(
                    session: "s", task: 1, errorCode: "http503", errorMessage: "HTTP 503", at: t0 + 2, reason: .retryAfter, now: t0)
            }
            let store = try FerryStore(path: path)
            defer { try? store.close() }
            let task = try #require(try await store.task(session: "s", task: 1))
            #expect(task.timeoutIntervalForResource == 3_600 && task.timeoutIntervalForRequest == 30)
            #expect(task.retryReason == .retryAfter && task.nextAttemptAt == t0 + 2 && task.state == .waiting)
            #expect(try await store.runnableTasks(now: t0 + 1.9).isEmpty)
            #expect(try await store.runnableTasks(now: t0 + 2).map(\.taskIdentifier) == [1])
        }
    }

    @Test("a time-out that is not positive is refused")
    func badTimeout() async throws {
        try await withStore { (store, _) async throws in
            var task = download("a")
            task.timeoutIntervalForResource = 0
            let error = await #expect(throws: FerryStoreError.self) { try await store.submit(task) }
            #expect(error?.code == .invalidTask)
            #expect(try await store.tasks(in: "s").isEmpty)
        }
    }

    @Test("a session's per-host limit starts at 6, changes within 1…64, and refuses others")
    func connectionLimit() async throws {
        try await withStore { (store, _) async throws in
            #expect(try await store.session("s")?.maximumConnectionsPerHost == 6)
            #expect(try await store.configure(session: "s", maximumConnectionsPerHost: 2).maximumConnectionsPerHost == 2)
            for bad in [0, 65] {
                await #expect(throws: FerryStoreError.self) { try await store.configure(session: "s", maximumConnectionsPerHost: bad) }
            }
            #expect(try await store.session("s")?.maximumConnectionsPerHost == 2)
            let error = await #expect(throws: FerryStoreError.self) { try await store.configure(session: "nope", maximumConnectionsPerHost: 3) }
            #expect(error?.code == .unknownSession)
        }
    }

    @Test("a session's network access and transfer options start as standard, are kept as set, and an unknown session is refused")
    func networkAccess() async throws {
        try await withStore { (store, _) async throws in
            #expect(try await store.session("s")?.networkAccess == .unrestricted)
            #expect(try await store.session("s")?.transferOptions == .standard)
            let access = NetworkAccess(waitsForConnectivity: true, allowsExpensiveNetworkAccess: false, isDiscretionary: true)
            #expect(try await store.configure(session: "s", networkAccess: access).networkAccess == access)
            #expect(try await store.session("s")?.networkAccess == access)
            let options = SessionTransferOptions(additionalTrustedCertificateFiles: ["/etc/example/ca.pem"])
            let configured = try await store.configure(session: "s", transferOptions: options)
            #expect(configured.transferOptions == options && configured.networkAccess == access, "each is kept when the other is set")
            let error = await #expect(throws: FerryStoreError.self) { try await store.configure(session: "nope", networkAccess: access) }
            #expect(error?.code == .unknownSession)
        }
    }

    @Test("retryNow brings forward only waiting tasks that back off from the given errors; nextRunnableDate(laterThan:) skips due ones")
    func retryNowAfterUnreachable() async throws {
        try await withStore { (store, _) async throws in
            for key in ["a", "b", "c"] { _ = try await store.submit(download(key), now: t0) }
            for (task, code, reason) in [(1, "cannotConnectToHost", RetryWait.backoff), (2, "http503", .retryAfter), (3, "badServerResponse", .backoff)] {
                _ = try await store.updateState(session: "s", task: task, to: .running, now: t0)
                try await store.scheduleRetry(session: "s", task: task, errorCode: code, errorMessage: code, at: t0 + 600, reason: reason, now: t0)
            }
            #expect(try await store.nextRunnableDate(laterThan: t0) == t0 + 600)
            #expect(try await store.retryNow(backingOffFrom: ["cannotConnectToHost", "timedOut"], now: t0 + 1) == 1)
            #expect(try await store.runnableTasks(now: t0 + 1).map(\.taskIdentifier) == [1])
            #expect(try await store.nextRunnableDate(laterThan: t0 + 1) == t0 + 600, "the due task is not 'later'")
            #expect(try await store.retryNow(backingOffFrom: [], now: t0 + 1) == 0)
        }
    }

    @Test("counts by state and per session, and all sessions together")
    func counts() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.openSession("t", appBundleIdentifier: "com.example.other")
            for name in ["a", "b", "c"] { _ = try await store.submit(download(name)) }
            _ = try await store.submit(download("d", session: "t"))
            _ = try await store.updateState(session: "s", task: 2, to: .running)
            _ = try await store.updateState(session: "s", task: 3, to: .suspended)
            try await store.appendEvent(event(1, "completed"))
            try await store.appendEvent(event(nil, "x"))
            #expect(try await store.taskCounts() == [.waiting: 2, .running: 1, .suspended: 1])
            let summaries = try await store.sessionSummaries()
            #expect(summaries.map(\.session.identifier) == ["s", "t"])
            #expect(summaries.map(\.taskCount) == [3, 1])
            #expect(summaries.map(\.undeliveredEventCount) == [2, 0])
            let counts = try await store.sessionCounts()
            #expect(counts.sessions == 2 && counts.undeliveredEvents == 2, "the summaries' figures, counted without them")
        }
    }
}

@Suite("Submitting many in one transaction")
struct BatchSubmitTests {
    @Test("each task in its own savepoint: a refused one fails alone, a key repeated in the batch returns the first")
    func batch() async throws {
        try await withStore { (store, _) async throws in
            var unreserved = download("bad")
            unreserved.taskIdentifier = 99
            let results = try await store.submit(all: [download("a", key: "k"), unreserved, download("b"), download("c", key: "k")], now: t0)
            let ids = results.map { (try? $0.get())?.task.taskIdentifier }
            #expect(ids == [1, nil, 2, 1])
            #expect(results.map { (try? $0.get())?.isNew } == [true, nil, true, false])
            if case .failure(let error) = results[1] { #expect(error.code == .invalidTask) } else { Issue.record("not refused") }
            #expect(try await store.tasks(in: "s").map(\.taskDescription) == ["a", "b"])
            #expect(try await store.nextTaskIdentifier(in: "s") == 3)
        }
    }
}

@Suite("Forgetting finished tasks")
struct RetentionTests {
    @Test("only finished tasks, changed before the date, with every event acknowledged, are deleted")
    func deleteFinished() async throws {
        try await withStore { (store, _) async throws in
            for name in ["old-done", "old-unacked", "old-waiting", "new-done"] { _ = try await store.submit(download(name), now: t0) }
            _ = try await store.updateState(session: "s", task: 1, to: .completed, now: t0)
            _ = try await store.updateState(session: "s", task: 2, to: .failed, appending: [event(2, "failed")], now: t0)
            _ = try await store.updateState(session: "s", task: 4, to: .completed, now: t0 + 100)
            #expect(try await store.deleteFinishedTasks(changedBefore: t0 + 50) == 1)
            #expect(try await store.tasks(in: "s").map(\.taskDescription) == ["old-unacked", "old-waiting", "new-done"])
            #expect(try await store.nextTaskIdentifier(in: "s") == 5)  // identifiers are not reused
        }
    }
}
