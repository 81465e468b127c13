import FerryTestSupport
import Foundation
import Testing

/// Dropbox v1's `POST /1/delta` over the change journal: what changed since a cursor, in
/// pages (`has_more`), with deletions as `null`, filtered by `path_prefix`, reset without a
/// cursor, and a clear 400 for a cursor that is not one.
@Suite("Change feed: /1/delta", .postgres)
struct DeltaTests {
    struct Page {
        let entries: [(String, [String: Any]?)]
        let reset: Bool
        let hasMore: Bool
        let cursor: String
        var paths: [String] { entries.map(\.0) }
        func metadata(_ path: String) -> [String: Any]? { entries.first { $0.0 == path }?.1 }
    }

    static func delta(_ server: TestServer, cursor: String? = nil, prefix: String? = nil) async throws -> Page {
        var form: [String: String] = [:]
        if let cursor { form["cursor"] = cursor }
        if let prefix { form["path_prefix"] = prefix }
        let reply = try await server.post("/1/delta", form: form)
        guard reply.status == 200, let raw = reply.object["entries"] as? [[Any]], let cursor = reply.object["cursor"] as? String else {
            throw TestFailure("delta answered \(reply.status): \(reply.text)")
        }
        let entries = raw.map { pair in (pair[0] as? String ?? "?", pair[1] as? [String: Any]) }
        return Page(entries: entries, reset: reply.object["reset"] as? Bool ?? false,
                    hasMore: reply.object["has_more"] as? Bool ?? false, cursor: cursor)
    }

    /// Every page from `cursor` on until `has_more` is false.
    static func all(_ server: TestServer, from cursor: String? = nil) async throws -> [Page] {
        var pages = [try await delta(server, cursor: cursor)]
        while pages.last!.hasMore {
            guard pages.count < 100 else { throw TestFailure("delta had more after 100 pages") }
            pages.append(try await delta(server, cursor: pages.last!.cursor))
        }
        return pages
    }

    @Test(arguments: Backend.allCases) func listsWhatChangedSinceACursorInPages(backend: Backend) async throws {
        try await TestServer.with(backend: backend, { $0.deltaPageSize = 2 }) { server in
            let alice = server.signedIn(as: try await ClubCLI.add("alice", to: server).token)
            for name in ["a", "b", "c"] { _ = try await server.put("/1/files_put/dropbox/byteclub/\(name).txt", Array(name.utf8)) }

            // No cursor: a reset, the whole tree (the folder and three files: four journal rows) in two pages.
            let start = try await Self.all(server)
            #expect(start.count == 2)
            #expect(start.map(\.reset) == [true, false])
            #expect(start.map(\.hasMore) == [true, false])
            #expect(Set(start.flatMap(\.paths)) == ["/byteclub", "/byteclub/a.txt", "/byteclub/b.txt", "/byteclub/c.txt"])
            #expect(start.flatMap(\.entries).allSatisfy { $0.1 != nil })

            // Another member writes, dev deletes: both, once each, deletion as null.
            _ = try await alice.put("/1/files_put/dropbox/byteclub/d.txt", Array("d".utf8))
            #expect(try await server.post("/1/fileops/delete", form: ["root": "dropbox", "path": "/byteclub/a.txt"]).status == 200)
            let changes = try await Self.delta(server, cursor: start.last!.cursor)
            #expect(!changes.reset && !changes.hasMore)
            #expect(changes.paths == ["/byteclub/a.txt", "/byteclub/d.txt"])
            #expect(changes.metadata("/byteclub/a.txt") == nil)
            let d = try #require(changes.metadata("/byteclub/d.txt"))
            #expect(d["path"] as? String == "/byteclub/d.txt")
            #expect((d["modifier"] as? [String: Any])?["display_name"] as? String == "alice")
            #expect(try await Self.delta(alice, cursor: changes.cursor).entries.isEmpty)

            // path_prefix keeps to a folder; a move is the old path gone and the new one there.
            _ = try await server.put("/1/files_put/dropbox/other/x.txt", [1])
            #expect(try await Self.delta(server, cursor: changes.cursor, prefix: "/byteclub").entries.isEmpty)
            let other = try await Self.all(server, from: changes.cursor)
            #expect(other.flatMap(\.paths) == ["/other", "/other/x.txt"])
            let moved = try await server.post("/1/fileops/move", form: ["root": "dropbox", "from_path": "/byteclub/b.txt", "to_path": "/byteclub/old/b.txt"])
            #expect(moved.status == 200)
            let afterMove = try await Self.all(server, from: other.last!.cursor)
            #expect(afterMove.flatMap(\.paths) == ["/byteclub/b.txt", "/byteclub/old", "/byteclub/old/b.txt"])
            let movedAway = afterMove.first { $0.paths.contains("/byteclub/b.txt") }
            #expect(movedAway != nil && movedAway?.metadata("/byteclub/b.txt") == nil)
        }
    }

    @Test func aCursorThatIsNotOneIsRefusedClearly() async throws {
        try await TestServer.with { server in
            let garbage = try await server.post("/1/delta", form: ["cursor": "AAFzZWNyZXQ"])
            #expect(garbage.status == 400)
            #expect(garbage.object["error"] as? String
                == "Invalid value for parameter 'cursor': not a cursor from /1/delta (call /1/delta without a cursor to start over)")
            let cursor = try await Self.delta(server).cursor
            let tampered = String(cursor.dropLast()) + (cursor.last == "0" ? "1" : "0")
            #expect(try await server.post("/1/delta", form: ["cursor": tampered]).status == 400)
            #expect(try await server.get("/1/longpoll_delta?cursor=garbage").status == 400)
            let missing = try await server.get("/1/longpoll_delta")
            #expect(missing.status == 400)
            #expect((missing.object["error"] as? String)?.contains("'cursor'") == true)
            for timeout in ["0", "481", "soon"] {
                let bad = try await server.get("/1/longpoll_delta?cursor=\(cursor)&timeout=\(timeout)")
                #expect(bad.status == 400, "timeout=\(timeout)")
                #expect((bad.object["error"] as? String)?.contains("'timeout'") == true)
            }
            #expect(try await server.post("/1/delta", form: ["cursor": cursor], auth: false).status == 401)

            // A real cursor of another database (ahead of this journal): delta starts over, and
            // longpoll says there are changes so that the client asks delta.
            let foreign = try await TestServer.with { elsewhere in
                for i in 0..<5 { _ = try await elsewhere.put("/1/files_put/dropbox/f\(i).txt", [1]) }
                return try await Self.delta(elsewhere).cursor
            }
            let restarted = try await Self.delta(server, cursor: foreign)
            #expect(restarted.reset)
            let poll = try await server.get("/1/longpoll_delta?cursor=\(foreign)&timeout=5")
            #expect(poll.object["changes"] as? Bool == true)
        }
    }
}
