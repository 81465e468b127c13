import Foundation
@testable import FerryStore
import Synchronization
import Testing

@Suite("Events")
struct EventTests {
    @Test("events come back in order; acknowledging deletes only up to N, only in that session; all survive reopen")
    func orderAckAndReopen() async throws {
        try await withStore { (store, path) async throws in
            _ = try await store.openSession("other", appBundleIdentifier: "com.example.other")
            _ = try await store.submit(download("a"))
            _ = try await store.submit(download("b", session: "other"))
            var sequences: [Int64] = []
            var highest: Int64 = 0
            for index in 0..<10 {
                let stored = try await store.appendEvent(index % 3 == 0 ? event(nil, "session-\(index)") : event(1, "e\(index)"), now: t0)
                sequences.append(stored.sequence)
                highest = try await store.appendEvent(event(1, "o\(index)", session: "other")).sequence
            }
            #expect(sequences == sequences.sorted())
            #expect(try await store.undeliveredEvents(in: "s").map(\.sequence) == sequences)
            #expect(try await store.undeliveredEvents(in: "s", after: sequences[6]).map(\.sequence) == Array(sequences[7...]))
            #expect(try await store.undeliveredEvents(in: "s", limit: 3).map(\.kind) == ["session-0", "e1", "e2"])
            #expect(try await store.sessionsWithUndeliveredEvents() == ["other", "s"])

            #expect(try await store.acknowledge(session: "s", upTo: sequences[3]) == 4)
            #expect(try await store.acknowledge(session: "s", upTo: sequences[3]) == 0)  // twice is harmless
            #expect(try await store.undeliveredEvents(in: "other").count == 10)

            try store.close()
            let reopened = try FerryStore(path: path)
            defer { try? reopened.close() }
            let left = try await reopened.undeliveredEvents(in: "s")
            #expect(left.map(\.sequence) == Array(sequences[4...]))
            #expect(left.first?.payload == #"{"type":"e4"}"#)
            #expect(left.first?.taskIdentifier == 1)
            #expect(left.first?.createdAt == t0)

            // Sequence numbers are never reused, even after everything was acknowledged and reopened.
            #expect(try await reopened.acknowledge(session: "s", upTo: Int64.max) == 6)
            #expect(try await reopened.acknowledge(session: "other", upTo: Int64.max) == 10)
            #expect(try await reopened.sessionsWithUndeliveredEvents().isEmpty)
            let next = try await reopened.appendEvent(event(1, "after"))
            #expect(next.sequence == highest + 1)
        }
    }

    @Test("single events after the point are acknowledged too, only in that session, in slices past SQLite's parameter limit")
    func singleAcknowledgements() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.openSession("other", appBundleIdentifier: "com.example.other")
            _ = try await store.submit(download("a"))
            _ = try await store.submit(download("b", session: "other"))
            var sequences: [Int64] = []
            var others: [Int64] = []
            for index in 0..<1_200 {
                sequences.append(try await store.appendEvent(event(1, "e\(index)")).sequence)
                if index < 3 { others.append(try await store.appendEvent(event(1, "o\(index)", session: "other")).sequence) }
            }
            // Up to the second, plus the fourth, plus every odd index from 9 on (596 singles),
            // plus another session's sequences, which stay.
            let single = [sequences[3]] + stride(from: 9, to: 1_200, by: 2).map { sequences[$0] } + others
            let removed = try await store.acknowledge(session: "s", upTo: sequences[1], also: single)
            #expect(removed == 2 + 1 + 596)
            let left = try await store.undeliveredEvents(in: "s", limit: 2_000).map(\.sequence)
            #expect(left == [sequences[2]] + (4...8).map { sequences[$0] } + stride(from: 10, to: 1_200, by: 2).map { sequences[$0] })
            #expect(try await store.undeliveredEvents(in: "other").count == 3)
        }
    }

    @Test("an event for an unknown session or task, or with a payload that is not JSON, is refused")
    func refused() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.submit(download("a"))
            let ghostSession = await #expect(throws: FerryStoreError.self) { try await store.appendEvent(event(nil, "x", session: "ghost")) }
            #expect(ghostSession?.code == .constraintViolation)
            await #expect(throws: FerryStoreError.self) { try await store.appendEvent(event(42, "x")) }
            await #expect(throws: FerryStoreError.self) {
                try await store.appendEvent(NewEvent(sessionIdentifier: "s", taskIdentifier: 1, kind: "x", payload: "not json"))
            }
            await #expect(throws: FerryStoreError.self) {
                try await store.appendEvent(NewEvent(sessionIdentifier: "s", taskIdentifier: 1, kind: "", payload: "{}"))
            }
            #expect(try await store.undeliveredEvents(in: "s").isEmpty)
        }
    }
}

@Suite("Committed events")
struct CommittedEventTests {
    /// What the observer was handed, in order.
    final class Heard: Sendable {
        private let batches = Mutex<[CommittedEvents]>([])
        func add(_ batch: CommittedEvents) { batches.withLock { $0.append(batch) } }
        var all: [CommittedEvents] { batches.withLock { $0 } }
    }

    @Test("each commit hands its events over once, in sequence order, after they are readable; a rolled-back write's never")
    func observerSeesCommittedEventsOnly() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.submit(download("a"))
            let heard = Heard()
            store.observeCommittedEvents { heard.add($0) }
            let before = Date()
            // Written together, so most share a transaction: the failing one (its second event
            // is not JSON) is rolled back alone, after its first event was inserted.
            async let first = store.appendEvent(event(1, "first"))
            async let failing: Result<TaskRecord, any Error> = {
                do {
                    return .success(try await store.updateTask(session: "s", task: 1, appending: [
                        event(1, "rolled-back"), NewEvent(sessionIdentifier: "s", taskIdentifier: 1, kind: "bad", payload: "not json"),
                    ]) { $0.state = .running })
                } catch {
                    return .failure(error)
                }
            }()
            async let last = store.appendEvent(event(1, "last"))
            let stored = try await [first, last]
            let failed = await failing
            #expect(throws: FerryStoreError.self) { try failed.get() }

            let batches = heard.all
            let events = batches.flatMap(\.events)
            #expect(events.map(\.sequence) == stored.map(\.sequence).sorted())
            #expect(events.map(\.kind).sorted() == ["first", "last"])
            #expect(events.map(\.sequence) == events.map(\.sequence).sorted())
            for batch in batches {
                #expect(batch.committedAt >= before)
                #expect(batch.events.allSatisfy { $0.createdAt <= batch.committedAt })
            }
            #expect(try await store.undeliveredEvents(in: "s").map(\.kind) == events.map(\.kind))
            #expect(try await store.task(session: "s", task: 1)?.state == .waiting)

            // Stopping the observer stops the calls.
            store.observeCommittedEvents(nil)
            _ = try await store.appendEvent(event(1, "unheard"))
            #expect(heard.all.flatMap(\.events).count == 2)
        }
    }

    @Test("the observer is called through as many frames at the 300th commit as at the first (ferryd's grew two per commit)")
    func observerCallDepthStaysPut() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.submit(download("a"))
            let depths = Mutex<[Int]>([])
            store.observeCommittedEvents { _ in
                let depth = Thread.callStackReturnAddresses.count
                depths.withLock { $0.append(depth) }
            }
            for _ in 0..<300 { _ = try await store.appendEvent(event(1, "progress")) }
            store.observeCommittedEvents(nil)
            let seen = depths.withLock { $0 }
            #expect(seen.count == 300)
            // The writer's queue may run on another dispatch thread with a few frames more.
            #expect((seen.last ?? 0) <= (seen.first ?? 0) + 8, "call depth went from \(seen.first ?? 0) to \(seen.last ?? 0) frames")
        }
    }

    @Test("an acknowledgement hands back the removed events of the kind asked for (that session's, up to N and the single ones after it) and says whether any are left")
    func acknowledgingReturnsOneKind() async throws {
        try await withStore { (store, _) async throws in
            _ = try await store.openSession("other", appBundleIdentifier: "com.example.other")
            _ = try await store.submit(download("a"))
            _ = try await store.submit(download("b", session: "other"))
            var finished: [Int64] = []
            for index in 0..<12 {
                let kind = index % 2 == 0 ? "downloadFinished" : "completed"
                let stored = try await store.appendEvent(event(1, kind))
                if kind == "downloadFinished" { finished.append(stored.sequence) }
                _ = try await store.appendEvent(event(1, "downloadFinished", session: "other"))
            }
            // Up to the third, and the fifth alone.
            let first = try await store.acknowledging(session: "s", upTo: finished[2], also: [finished[4]], returning: "downloadFinished")
            #expect(first.removedOfKind.map(\.sequence) == [finished[0], finished[1], finished[2], finished[4]])
            #expect(first.removedOfKind.allSatisfy { $0.kind == "downloadFinished" && $0.sessionIdentifier == "s" })
            #expect(first.removed == 5 + 1, "three finished and two completed up to the third, and the fifth")
            #expect(first.eventsLeft)
            // Without a kind, none is read; the rest goes and nothing is left; the other session keeps its own.
            let rest = try await store.acknowledging(session: "s", upTo: Int64.max)
            #expect(rest.removedOfKind.isEmpty)
            #expect(rest.removed == 12 - 6)
            #expect(!rest.eventsLeft)
            #expect(try await store.undeliveredEvents(in: "other").count == 12)
        }
    }
}
