@testable import FerryDaemon
import FerryCore
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// An owner that asks for an event window gets no more of its session's events and progress
/// than the window beyond what it said it took; the rest waits in the store and comes, in
/// order, as it takes more (docs/protocol.md, "Pacing").
@Suite("Pacing a slow owner's events")
struct PacingTests {
    /// Pushed messages that arrive within `quiet` seconds of each other, until none does.
    static func pushesUntilQuiet(_ client: RawClient, quiet: Double = 1.0) async throws -> [DaemonMessage] {
        var seen: [DaemonMessage] = []
        for _ in 0..<10_000 {
            do {
                seen.append(try await client.nextPush(timeout: quiet))
            } catch is TestFailure {
                return seen  // quiet for `quiet` seconds
            }
        }
        throw TestFailure("more than 10,000 pushes without a pause")
    }

    static func counted(_ messages: [DaemonMessage]) -> (events: [Event], progress: Int) {
        var events: [Event] = []
        var progress = 0
        for message in messages {
            switch message {
            case .event(let event): events.append(event)
            case .progress: progress += 1
            default: break
            }
        }
        return (events, progress)
    }

    @Test("a window of 5: five messages, nothing more until 'taken' says so, then the rest in order, each once")
    func windowHoldsEventsBack() async throws {
        let daemon = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await daemon.client("paced-app")
        let session = "paced.session"
        _ = try await client.request(.attach(AttachSession(sessionIdentifier: session, owner: true, eventWindow: 5)))
        var identifiers: [Int] = []
        for seed in 1...6 as ClosedRange<UInt64> {
            identifiers.append(try await client.submit(TaskSubmission.download(session, server.baseURL + "/bytes/100?seed=\(seed)")).taskIdentifier)
        }
        try await daemon.waitUntilCompleted(session, identifiers)
        let stored = try await daemon.store.undeliveredEvents(in: session).count
        #expect(stored == 18, "three events for each of six downloads")

        var first = Self.counted(try await Self.pushesUntilQuiet(client))
        #expect(first.events.count + first.progress == 5, "the window's five, then nothing for a second: \(first)")

        // A count that goes back opens nothing.
        _ = try await client.request(.taken(EventsTaken(sessionIdentifier: session, count: 2)))
        _ = try await client.request(.taken(EventsTaken(sessionIdentifier: session, count: 1)))
        let afterTwo = Self.counted(try await Self.pushesUntilQuiet(client, quiet: 0.5))
        #expect(afterTwo.events.count + afterTwo.progress == 2, "two taken, two more sent: \(afterTwo)")
        first.events += afterTwo.events
        first.progress += afterTwo.progress

        var events = first.events
        var taken = first.events.count + first.progress
        for _ in 0..<20 where events.count < stored {
            _ = try await client.request(.taken(EventsTaken(sessionIdentifier: session, count: taken)))
            let more = Self.counted(try await Self.pushesUntilQuiet(client, quiet: 0.5))
            #expect(more.events.count + more.progress <= 5, "at most a window at a time: \(more)")
            events += more.events
            taken += more.events.count + more.progress
        }
        #expect(events.count == stored, "every stored event came: \(events.map(\.sequence))")
        #expect(events.map(\.sequence) == events.map(\.sequence).sorted(), "in order")
        #expect(Set(events.map(\.sequence)).count == events.count, "each once")
        client.close()
        try await server.shutdown()
        await daemon.shutdown()
    }

    @Test("a byte window: data tasks' bodies come a MiB at a time beyond what was taken, whole and in order")
    func byteWindowHoldsBodiesBack() async throws {
        let daemon = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let client = try await daemon.client("paced-app")
        let session = "paced.bytes"
        let byteWindow = 1 << 20
        _ = try await client.request(.attach(AttachSession(sessionIdentifier: session, owner: true, eventWindow: 256, eventByteWindow: byteWindow)))
        let size = 1 << 20
        var identifiers: [Int] = []
        for seed in 1...4 as ClosedRange<UInt64> {
            let submission = TaskSubmission(
                sessionIdentifier: session, kind: .data, request: TaskRequest(url: URL(string: server.baseURL + "/bytes/\(size)?seed=\(seed)")!))
            identifiers.append(try await client.submit(submission).taskIdentifier)
        }
        try await daemon.waitUntilCompleted(session, identifiers)
        let stored = try await daemon.store.undeliveredEvents(in: session).count
        #expect(stored == 4 * 6, "a response, four data events and a completion for each task")

        func bodyBytes(_ events: [Event]) -> Int {
            events.reduce(0) { total, event in
                guard case .data(let bytes) = event.kind else { return total }
                return total + bytes.count
            }
        }
        var pushed = Self.counted(try await Self.pushesUntilQuiet(client, quiet: 0.5))
        var events = pushed.events
        var taken = pushed.events.count + pushed.progress
        let first = bodyBytes(events)
        #expect(first > 0 && first <= byteWindow + EventKind.maximumDataSize, "the byte window's worth, one event past it at most: \(first) bytes")
        for _ in 0..<100 where events.count < stored {
            _ = try await client.request(.taken(EventsTaken(sessionIdentifier: session, count: taken)))
            pushed = Self.counted(try await Self.pushesUntilQuiet(client, quiet: 0.5))
            let more = bodyBytes(pushed.events)
            #expect(more <= byteWindow + EventKind.maximumDataSize, "a window at a time: \(more) bytes")
            events += pushed.events
            taken += pushed.events.count + pushed.progress
        }
        #expect(events.count == stored, "every stored event came")
        #expect(events.map(\.sequence) == events.map(\.sequence).sorted() && Set(events.map(\.sequence)).count == events.count)
        for (seed, identifier) in zip(1...4 as ClosedRange<UInt64>, identifiers) {
            var body = Data()
            for event in events where event.taskIdentifier == identifier {
                if case .data(let bytes) = event.kind { body.append(bytes) }
            }
            let expected = Data(TestContent.bytes(count: size, seed: seed))
            #expect(body == expected, "task \(identifier)'s body whole: \(body.count) bytes")
        }
        client.close()
        try await server.shutdown()
        await daemon.shutdown()
    }

    @Test("the window's count starts again at a new owner's attach, and an unpaced owner gets everything at once")
    func newOwnerStartsAgain() async throws {
        let daemon = try await InProcessDaemon()
        let server = try await TestHTTPServer.start()
        let session = "paced.again"
        let first = try await daemon.client("paced-app")
        _ = try await first.request(.attach(AttachSession(sessionIdentifier: session, owner: true, eventWindow: 2)))
        let task = try await first.submit(TaskSubmission.download(session, server.baseURL + "/bytes/100?seed=9"))
        try await daemon.waitUntilCompleted(session, [task.taskIdentifier])
        let firstOwner = Self.counted(try await Self.pushesUntilQuiet(first))
        #expect(firstOwner.events.count + firstOwner.progress == 2, "\(firstOwner)")
        first.close()

        let paced = try await daemon.client("paced-app")
        try await poll(until: "the first owner to be gone", timeout: .seconds(10)) {
            (try? await paced.request(.attach(AttachSession(sessionIdentifier: session, owner: true, eventWindow: 2)))) != nil
        }
        #expect(Self.counted(try await Self.pushesUntilQuiet(paced)).events.count == 2, "a new count: two again, from the first")
        paced.close()

        let unpaced = try await daemon.client("paced-app")
        try await poll(until: "the second owner to be gone", timeout: .seconds(10)) {
            (try? await unpaced.request(.attach(AttachSession(sessionIdentifier: session, owner: true)))) != nil
        }
        #expect(Self.counted(try await Self.pushesUntilQuiet(unpaced)).events.count == 3, "unpaced: all three")
        unpaced.close()
        try await server.shutdown()
        await daemon.shutdown()
    }
}

/// The window's arithmetic as a value.
@Suite("EventPacing")
struct EventPacingTests {
    /// `count` small messages (the byte window is not what these look at).
    static func messages(_ count: Int) -> [Int] { Array(repeating: 100, count: count) }

    @Test("reserve grants what the window leaves; taken opens it, never beyond what was sent nor back; unreserve returns what did not go")
    func arithmetic() {
        var pacing = EventPacing(window: 4)
        #expect(pacing.reserve(Self.messages(3)) == 3)
        #expect(pacing.reserve(Self.messages(3)) == 1)
        #expect(pacing.reserve(Self.messages(1)) == 0)
        pacing.took(2)
        #expect(pacing.room == 2)
        pacing.took(1)
        #expect(pacing.room == 2, "a smaller total changes nothing")
        pacing.took(100)
        #expect(pacing.room == 4, "only what was sent counts")
        #expect(pacing.reserve(Self.messages(4)) == 4)
        pacing.unreserve(1)  // a progress report that met a full socket
        #expect(pacing.room == 1)
        pacing.took(5)
        #expect(pacing.room == 2, "seven went in all; the owner took five")
    }

    @Test("a byte window stops at the message that crosses it, opens as the owner's count passes the large ones, and forgets what did not go")
    func bytes() {
        var pacing = EventPacing(window: 100, byteWindow: 1000)
        #expect(pacing.reserve([10, 600, 600, 10]) == 3, "the third crosses 1,000 bytes and goes; the fourth waits")
        #expect(pacing.bytesInFlight == 1210)
        #expect(!pacing.hasRoom)
        #expect(pacing.reserve([10]) == 0)
        pacing.took(1)
        #expect(!pacing.hasRoom, "1,200 bytes are still out")
        pacing.took(2)
        #expect(pacing.hasRoom && pacing.bytesInFlight == 600)
        #expect(pacing.reserve([5000]) == 1, "one message goes whatever its size while there is room")
        pacing.unreserve(1)
        #expect(pacing.bytesInFlight == 600, "the one that did not go holds nothing")
        pacing.took(3)
        #expect(pacing.bytesInFlight == 0 && pacing.room == 100)
        var unbounded = EventPacing(window: 2)
        #expect(unbounded.reserve([1 << 30, 1 << 30, 1]) == 2, "without a byte window only the count counts")
    }
}
