import FerryCore
import Foundation
@testable import FerryStore
import Testing

@Suite("Tasks")
struct TaskTests {
    @Test("a submitted task is on disk: a new store on the same file finds it, every field intact")
    func submitIsDurable() async throws {
        try await withStore { (store, path) async throws in
            var task = download("big.iso", key: "k1", priority: 0.8, begin: t0.addingTimeInterval(60))
            task.destination = "/data/group.example/big.iso.download"
            task.resumeValidator = "\"etag-1\""
            task.resumeOffset = 1_000
            let submitted = try await store.submit(task, now: t0)
            #expect(submitted.isNew)
            #expect(submitted.task.taskIdentifier == 1)
            #expect(submitted.task.state == .waiting)
            #expect(submitted.task.bytesReceived == 1_000)
            try store.close()

            let reopened = try FerryStore(path: path)
            defer { try? reopened.close() }
            let stored = try #require(try await reopened.task(session: "s", task: 1))
            #expect(stored == submitted.task)
            #expect(stored.request.headers == HeaderFields([("Accept", "*/*"), ("X-Tag", "a"), ("X-Tag", "b")]))
            #expect(stored.earliestBeginDate == t0.addingTimeInterval(60))
            #expect(try await reopened.scalarForTest("SELECT headers FROM task") == #"[["Accept","*/*"],["X-Tag","a"],["X-Tag","b"]]"#)
            // Dates are numbers, so SQL compares them (runnableTasks depends on it).
            #expect(try await reopened.scalarForTest(
                "SELECT typeof(created_at) || typeof(updated_at) || typeof(earliest_begin_date) FROM task") == "realrealreal")
        }
    }

    @Test("the task's retry policy is stored with it and read back equal")
    func retryPolicyIsStored() async throws {
        try await withStore { (store, _) async throws in
            var task = download("p")
            task.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(500), retryableStatuses: [503])
            _ = try await store.submit(task, now: t0)
            #expect(try await store.task(session: "s", task: 1)?.retryPolicy == task.retryPolicy)
            #expect(try await store.scalarForTest("SELECT json_extract(retry_policy, '$.initialDelay') FROM task") == "0.5")
        }
    }

    @Test("a row the store cannot read is an error naming the row and the column, never a guessed task", arguments: [
        ("retry_policy", #"'{"maximumAttempts":0,"initialDelay":1,"maximumDelay":1,"retryableStatuses":[503],"maximumRetryAfter":1}'"#),
        ("url", "'http://[not a url'"),
    ])
    func unreadableRow(column: String, value: String) async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.submit(download("ok"), now: t0)
            _ = try await store.submit(download("bad"), now: t0)
            try await store.executeForTest("UPDATE task SET \(column) = \(value) WHERE task_identifier = 2")
            #expect(try await store.task(session: "s", task: 1) != nil, "the readable row is still read")
            let error = await #expect(throws: FerryStoreError.self) { try await store.task(session: "s", task: 2) }
            #expect(error?.code == .unreadableRow)
            #expect(error?.message.contains("session_identifier s, task_identifier 2") == true, "\(String(describing: error))")
        }
    }

    @Test("submitting an idempotency key again returns the existing task and writes nothing")
    func idempotentSubmit() async throws {
        try await withStore { (store, _) async throws in
            let first = try await store.submit(download("a", key: "share-001"), now: t0)
            var again = download("different-url", key: "share-001", priority: 1)
            again.kind = .data
            let second = try await store.submit(again, now: t0.addingTimeInterval(5))
            #expect(!second.isNew)
            #expect(second.task == first.task)
            #expect(try await store.tasks(in: "s").count == 1)
            #expect(try await store.nextTaskIdentifier(in: "s") == 2)  // no identifier was spent

            // Another session may use the same key; tasks without a key are never merged.
            _ = try await store.openSession("other", appBundleIdentifier: "com.example.other")
            #expect(try await store.submit(download("a", session: "other", key: "share-001")).isNew)
            #expect(try await store.submit(download("x")).isNew)
            #expect(try await store.submit(download("x")).isNew)
            #expect(try await store.tasks(in: "s").map(\.taskIdentifier) == [1, 3, 4])
            #expect(try await store.tasks(in: "s", after: 1, limit: 1).map(\.taskIdentifier) == [3])
            #expect(try await store.tasks(in: "s", after: 3).map(\.taskIdentifier) == [4])
            #expect(try await store.tasks(in: "s", after: 4, limit: 10).isEmpty)
        }
    }

    @Test("concurrent submits get distinct identifiers, and concurrent resubmits of one key make one task")
    func concurrentSubmits() async throws {
        try await withStore { (store, _) async throws in
            let identifiers = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<40 {
                    group.addTask { try await store.submit(download("f\(index)", key: index < 20 ? nil : "same")).task.taskIdentifier }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(Set(identifiers).count == 21)
            #expect(try await store.tasks(in: "s").count == 21)
        }
    }

    @Test("identifiers reserved in a block follow one another; the next reservation starts after the block")
    func reservedBlocks() async throws {
        try await withStore { (store, _) async throws in
            #expect(try await store.nextTaskIdentifier(in: "s", count: 4) == 1)
            #expect(try await store.nextTaskIdentifier(in: "s") == 5)
            var task = download("c")
            task.taskIdentifier = 3
            #expect(try await store.submit(task).task.taskIdentifier == 3, "an identifier inside a reserved block")
        }
    }

    @Test("reserved identifiers are used once; an identifier that was not reserved is refused")
    func reservedIdentifiers() async throws {
        try await withStore { (store, _) async throws in
            let reserved = try await store.nextTaskIdentifier(in: "s")
            #expect(reserved == 1)
            var task = download("a")
            task.taskIdentifier = reserved
            #expect(try await store.submit(task).task.taskIdentifier == 1)
            let reuse = await #expect(throws: FerryStoreError.self) { try await store.submit(task) }
            #expect(reuse?.code == .invalidTask)
            task.taskIdentifier = 7
            let unreserved = await #expect(throws: FerryStoreError.self) { try await store.submit(task) }
            #expect(unreserved?.code == .invalidTask)
            #expect(unreserved?.message.contains("not reserved") == true)
            let unknown = await #expect(throws: FerryStoreError.self) { try await store.nextTaskIdentifier(in: "nope") }
            #expect(unknown?.code == .unknownSession)
        }
    }

    @Test("values the schema forbids are refused, nothing is written and no identifier is spent")
    func constraints() async throws {
        try await withStore { (store, _) async throws in
            let tooHigh = await #expect(throws: FerryStoreError.self) { try await store.submit(download("a", priority: 1.5)) }
            #expect(tooHigh?.code == .invalidTask)
            #expect(tooHigh?.message.contains("task_priority_range") == true)
            #expect(tooHigh?.message.contains("nothing was written") == true)

            let upload = NewTask(sessionIdentifier: "s", task: TaskDescription(kind: .upload, request: TaskRequest(url: URL(string: "http://x/")!, method: "POST")))
            let noBody = await #expect(throws: FerryStoreError.self) { try await store.submit(upload) }
            #expect(noBody?.message.contains("task_upload_needs_body") == true)

            var halfResume = download("b")
            halfResume.resumeOffset = 10
            await #expect(throws: FerryStoreError.self) { try await store.submit(halfResume) }

            let noSession = await #expect(throws: FerryStoreError.self) { try await store.submit(download("c", session: "ghost")) }
            #expect(noSession?.code == .unknownSession)

            #expect(try await store.tasks(in: "s").isEmpty)
            #expect(try await store.submit(download("ok")).task.taskIdentifier == 1)

            // A bug in ferryd that writes a bad state directly is refused by the schema too.
            let badState = await #expect(throws: FerryStoreError.self) {
                try await store.executeForTest("UPDATE task SET state = 'paused'")
            }
            #expect(badState?.code == .invalidTask)
            #expect(badState?.message.contains("task_state") == true)
            await #expect(throws: FerryStoreError.self) { try await store.executeForTest("UPDATE task SET bytes_sent = -1") }
            await #expect(throws: FerryStoreError.self) { try await store.executeForTest("UPDATE task SET headers = '{oops'") }
            #expect(try await store.task(session: "s", task: 1)?.state == .waiting)
        }
    }

    @Test("updates change the task and its updatedAt; identity cannot change; a final state is final")
    func updates() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.submit(download("a"), now: t0)
            let running = try await store.updateTask(session: "s", task: 1, now: t0.addingTimeInterval(1)) {
                $0.state = .running
                $0.attemptCount += 1
            }
            #expect(running.state == .running && running.attemptCount == 1)
            #expect(running.updatedAt == t0.addingTimeInterval(1))

            try await store.updateProgress(
                session: "s", task: 1, bytesSent: 0, bytesReceived: 500, bytesExpectedToSend: nil, bytesExpectedToReceive: 2_000)
            #expect(try await store.task(session: "s", task: 1)?.bytesExpectedToReceive == 2_000)

            let identity = await #expect(throws: FerryStoreError.self) {
                try await store.updateTask(session: "s", task: 1) { $0.taskIdentifier = 9 }
            }
            #expect(identity?.code == .invalidTask)

            let done = try await store.updateState(session: "s", task: 1, to: .completed, appending: [event(1, "completed")])
            #expect(done.state == .completed)
            let revive = await #expect(throws: FerryStoreError.self) {
                try await store.updateState(session: "s", task: 1, to: .waiting)
            }
            #expect(revive?.code == .invalidTransition)
            #expect(revive?.message.contains("submit a new task") == true)

            let missing = await #expect(throws: FerryStoreError.self) { try await store.updateState(session: "s", task: 99, to: .running) }
            #expect(missing?.code == .unknownTask)
            let missingProgress = await #expect(throws: FerryStoreError.self) {
                try await store.updateProgress(session: "s", task: 99, bytesSent: 1, bytesReceived: 1, bytesExpectedToSend: nil, bytesExpectedToReceive: nil)
            }
            #expect(missingProgress?.code == .unknownTask)
        }
    }

    @Test("a transaction that fails midway leaves nothing behind")
    func atomicity() async throws {
        try await withStore { (store, _) async throws in
            let before = try await store.submit(download("a"), now: t0).task
            // The task update is written first; the second event is not JSON and fails.
            let badEvent = NewEvent(sessionIdentifier: "s", taskIdentifier: 1, kind: "completed", payload: "{not json")
            await #expect(throws: FerryStoreError.self) {
                try await store.updateTask(session: "s", task: 1, appending: [event(1, "response"), badEvent]) {
                    $0.state = .completed
                    $0.bytesReceived = 1_000
                }
            }
            #expect(try await store.task(session: "s", task: 1) == before)
            #expect(try await store.undeliveredEvents(in: "s").isEmpty)

            // A change that throws in Swift, after mutating the record, writes nothing either.
            struct Interrupted: Error {}
            await #expect(throws: FerryStoreError.self) {
                try await store.updateTask(session: "s", task: 1) {
                    $0.state = .failed
                    throw Interrupted()
                }
            }
            #expect(try await store.task(session: "s", task: 1) == before)
        }
    }

    @Test("runnable tasks: waiting ones whose begin date and retry time have passed, by priority then age")
    func runnable() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.submit(download("low-old", priority: 0.2), now: t0)
            _ = try await store.submit(download("mid-old", priority: 0.5), now: t0.addingTimeInterval(1))
            _ = try await store.submit(download("high", priority: 0.9), now: t0.addingTimeInterval(2))
            _ = try await store.submit(download("mid-new", priority: 0.5), now: t0.addingTimeInterval(3))
            _ = try await store.submit(download("later", priority: 1, begin: t0.addingTimeInterval(3_600)), now: t0)
            _ = try await store.submit(download("backing-off", priority: 1), now: t0)
            try await store.updateTask(session: "s", task: 6) { $0.nextAttemptAt = t0.addingTimeInterval(120); $0.lastErrorCode = "timedOut" }
            var suspended = download("suspended", priority: 1)
            suspended.initialState = .suspended
            _ = try await store.submit(suspended, now: t0)
            _ = try await store.submit(download("running", priority: 1), now: t0)
            try await store.updateState(session: "s", task: 8, to: .running)
            _ = try await store.openSession("other", appBundleIdentifier: "com.example.other")
            _ = try await store.submit(download("other-session", session: "other", priority: 0.5), now: t0.addingTimeInterval(2))

            let now = t0.addingTimeInterval(10)
            #expect(try await store.runnableTasks(now: now).map(\.taskDescription)
                == ["high", "mid-old", "other-session", "mid-new", "low-old"])
            #expect(try await store.runnableTasks(now: now, limit: 2).map(\.taskDescription) == ["high", "mid-old"])
            #expect(try await store.runnableTasks(now: t0.addingTimeInterval(120)).first?.taskDescription == "backing-off")
            #expect(try await store.runnableTasks(now: t0.addingTimeInterval(3_600)).first?.taskDescription == "later")
            #expect(try await store.nextRunnableDate(after: now) == now)

            for task in 1...4 { try await store.updateState(session: "s", task: task, to: .running) }
            try await store.updateState(session: "other", task: 1, to: .running)
            #expect(try await store.nextRunnableDate(after: now) == t0.addingTimeInterval(120))
            try await store.updateState(session: "s", task: 6, to: .cancelled)
            #expect(try await store.nextRunnableDate(after: now) == t0.addingTimeInterval(3_600))

            // After a crash, 'running' tasks are waiting again.
            #expect(try await store.requeueInterruptedTasks() == 6)
            #expect(try await store.runnableTasks(now: now).count == 6)
        }
    }

    @Test("a failed attempt waits until its retry time, with the error kept")
    func retry() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.submit(download("a"), now: t0)
            try await store.updateTask(session: "s", task: 1) { $0.state = .running; $0.attemptCount += 1 }
            let waiting = try await store.scheduleRetry(
                session: "s", task: 1, errorCode: "networkConnectionLost", errorMessage: "the connection broke",
                at: t0.addingTimeInterval(30))
            #expect(waiting.state == .waiting && waiting.attemptCount == 1)
            #expect(try await store.runnableTasks(now: t0.addingTimeInterval(29)).isEmpty)
            #expect(try await store.nextRunnableDate(after: t0) == t0.addingTimeInterval(30))
            let due = try await store.runnableTasks(now: t0.addingTimeInterval(30))
            #expect(due.map(\.lastErrorCode) == ["networkConnectionLost"])
        }
    }

    @Test("sessions: open is idempotent, list, delete takes tasks and events along")
    func sessions() async throws {
        try await withStore { (store, _) async throws in
            let (again, created) = try await store.openSession("s", appBundleIdentifier: "com.other")
            #expect(!created && again.appBundleIdentifier == "com.example.app")
            #expect(again.sharedContainerIdentifier == "group.example")
            _ = try await store.openSession("t", appBundleIdentifier: "com.example.t", now: t0)
            #expect(try await store.sessions().map(\.identifier).sorted() == ["s", "t"])
            _ = try await store.submit(download("a"))
            try await store.appendEvent(event(1, "completed"))
            #expect(try await store.deleteSession("s"))
            #expect(!(try await store.deleteSession("s")))
            #expect(try await store.tasks(in: "s").isEmpty)
            #expect(try await store.undeliveredEvents(in: "s").isEmpty)
            let empty = await #expect(throws: FerryStoreError.self) {
                try await store.openSession("", appBundleIdentifier: "com.example.app")
            }
            #expect(empty?.code == .constraintViolation)
        }
    }
}
