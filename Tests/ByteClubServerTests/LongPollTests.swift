import FerryTestSupport
import Foundation
import Testing

/// `GET /1/longpoll_delta`: answers `changes: true` as soon as a write commits (woken in
/// process), notices writes by another server process on the same database (its re-check of
/// the journal), `changes: false` after its timeout, and bounds its waiters (a client that
/// hung up frees its place). Time bounds: run one at a time (scripts/test).
@Suite("Change feed: /1/longpoll_delta", .serialized)
struct LongPollTests {
    static func cursor(_ server: TestServer) async throws -> String {
        try await DeltaTests.delta(server).cursor
    }

    /// Starts a long-poll; its task returns the answer and the moment it came.
    static func startLongPoll(_ server: TestServer, cursor: String, timeout: Int) -> Task<(TestServer.Reply, ContinuousClock.Instant), any Error> {
        Task { (try await server.get("/1/longpoll_delta?cursor=\(cursor)&timeout=\(timeout)"), ContinuousClock.now) }
    }

    @Test func answersAtOnceWhenAnotherMemberWrites() async throws {
        // A re-check every 30 s: only the in-process wake can answer within the bound.
        try await TestServer.with({ $0.longPollRecheckInterval = 30 }) { server in
            let alice = server.signedIn(as: try await ClubCLI.add("alice", dataDirectory: server.dataDirectory).token)
            let waiting = Self.startLongPoll(server, cursor: try await Self.cursor(server), timeout: 60)
            try await Task.sleep(for: .milliseconds(300))  // let it start waiting; answering earlier would pass too
            _ = try await alice.put("/1/files_put/dropbox/byteclub/new.txt", Array("hi".utf8))
            let written = ContinuousClock.now
            let (reply, answered) = try await waiting.value
            #expect(reply.status == 200)
            #expect(reply.object["changes"] as? Bool == true)
            #expect(answered - written < .milliseconds(500), "answered \(answered - written) after the write")
        }
    }

    @Test func answersNoChangesAfterItsTimeout() async throws {
        try await TestServer.with { server in
            let started = ContinuousClock.now
            let reply = try await server.get("/1/longpoll_delta?cursor=\(try await Self.cursor(server))&timeout=1")
            let elapsed = ContinuousClock.now - started
            #expect(reply.status == 200)
            #expect(reply.object["changes"] as? Bool == false)
            #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(3), "answered after \(elapsed)")
        }
    }

    @Test func noticesAWriteByAnotherServerProcessOnTheSameDatabase() async throws {
        try await TestServer.with({ $0.longPollRecheckInterval = 0.5 }) { server in
            let cursor = try await Self.cursor(server)
            try await ServerProcessTests.withServer(dataDirectory: server.dataDirectory) { other in
                let waiting = Self.startLongPoll(server, cursor: cursor, timeout: 60)
                try await Task.sleep(for: .milliseconds(300))
                let put = try await ServerProcessTests.request(other.port, "PUT", "/1/files_put/dropbox/byteclub/elsewhere.txt", body: [1], token: server.token)
                #expect(put.status == 200)
                let written = ContinuousClock.now
                let (reply, answered) = try await waiting.value
                #expect(reply.object["changes"] as? Bool == true)
                #expect(answered - written < .milliseconds(1500), "answered \(answered - written) after the other process's write")
            }
        }
    }

    @Test func waitersAreBoundedAndAClientThatHungUpFreesItsPlace() async throws {
        try await TestServer.with({ $0.longPollWaiterLimit = 1 }) { server in
            let cursor = try await Self.cursor(server)
            // A client waits (a raw connection, to hang up later); while it does, another is
            // refused at once with 503 and Retry-After. (Tried again should the second arrive first.)
            var first: RawHTTP?
            let refused = try await eventually("a long-poll refused while another waits", timeout: .seconds(15)) { () -> TestServer.Reply? in
                let waiter = try RawHTTP(port: server.port)
                try await waiter.head("GET", "/1/longpoll_delta?cursor=\(cursor)&timeout=60", [("Authorization", "Bearer \(server.token)")])
                try await Task.sleep(for: .milliseconds(200))
                let reply = try await server.get("/1/longpoll_delta?cursor=\(cursor)&timeout=1")
                guard reply.status == 503 else {
                    waiter.hangUp()
                    return nil
                }
                first = waiter
                return reply
            }
            #expect(refused.header("Retry-After") == "10")
            #expect((refused.object["error"] as? String)?.contains("Too many clients") == true)

            // The first client hangs up: its place is free within a re-check, not after its 60 s.
            try #require(first).hangUp()
            let hungUp = ContinuousClock.now
            let admitted = try await eventually("a long-poll admitted after the waiting client hung up", timeout: .seconds(5)) { () -> TestServer.Reply? in
                let reply = try await server.get("/1/longpoll_delta?cursor=\(cursor)&timeout=1")
                return reply.status == 200 ? reply : nil
            }
            #expect(admitted.object["changes"] as? Bool == false)
            #expect(ContinuousClock.now - hungUp < .seconds(4))
        }
    }
}
