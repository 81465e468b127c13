import Foundation
import Testing

/// Dropbox v1's `parent_rev` on `files_put` and `commit_chunked_upload`: the latest rev
/// replaces, a stale one keeps the body as "name (<member>'s conflicted copy).ext", and two
/// members saving the same note at once from the same rev get one replacement and one copy.
@Suite("Revisions and conflicted copies", .postgres)
struct ConflictTests {
    @Test(arguments: Backend.allCases) func currentParentRevReplacesAndAStaleOneMakesAConflictedCopy(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let alice = server.signedIn(as: try await ClubCLI.add("alice", to: server).token)
            let first = try await server.put("/1/files_put/dropbox/byteclub/note.txt", Array("v1".utf8))
            let rev1 = try #require(first.object["rev"] as? String)

            // dev edits from the latest rev: replaced in place, with a new rev.
            let second = try await server.put("/1/files_put/dropbox/byteclub/note.txt?parent_rev=\(rev1)", Array("v2 by dev".utf8))
            #expect(second.status == 200)
            #expect(second.object["path"] as? String == "/byteclub/note.txt")
            let rev2 = try #require(second.object["rev"] as? String)
            #expect(rev2 != rev1)

            // alice still edits from rev1: her body is kept beside it, the original stays.
            let stale = try await alice.put("/1/files_put/dropbox/byteclub/note.txt?parent_rev=\(rev1)", Array("v2 by alice".utf8))
            #expect(stale.status == 200)
            #expect(stale.object["path"] as? String == "/byteclub/note (alice's conflicted copy).txt")
            #expect((stale.object["modifier"] as? [String: Any])?["display_name"] as? String == "alice")
            #expect(try await server.get("/1/files/dropbox/byteclub/note.txt").text == "v2 by dev")
            #expect(try await server.get("/1/metadata/dropbox/byteclub/note.txt").object["rev"] as? String == rev2)
            #expect(try await server.get("/1/files/dropbox/byteclub/note%20(alice's%20conflicted%20copy).txt").text == "v2 by alice")

            // Again from a stale rev: a second copy, numbered; nothing is overwritten.
            let again = try await alice.put("/1/files_put/dropbox/byteclub/note.txt?parent_rev=\(rev1)", Array("v3 by alice".utf8))
            #expect(again.object["path"] as? String == "/byteclub/note (alice's conflicted copy 2).txt")
            #expect(try await server.get("/1/files/dropbox/byteclub/note%20(alice's%20conflicted%20copy).txt").text == "v2 by alice")

            // autorename=false: 409, nothing written.
            let refused = try await alice.put("/1/files_put/dropbox/byteclub/note.txt?parent_rev=\(rev1)&autorename=false", [1])
            #expect(refused.status == 409)

            // A rev this server never wrote is refused; a file deleted since is written back.
            let garbage = try await alice.put("/1/files_put/dropbox/byteclub/note.txt?parent_rev=nonsense", [1])
            #expect(garbage.status == 400)
            #expect((garbage.object["error"] as? String)?.contains("'parent_rev'") == true)
            #expect(try await server.post("/1/fileops/delete", form: ["root": "dropbox", "path": "/byteclub/note.txt"]).status == 200)
            let recreated = try await alice.put("/1/files_put/dropbox/byteclub/note.txt?parent_rev=\(rev2)", Array("back".utf8))
            #expect(recreated.object["path"] as? String == "/byteclub/note.txt")
        }
    }

    @Test(arguments: Backend.allCases) func twoMembersSavingAtOnceFromTheSameRevGetOneFileAndOneConflictedCopy(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let bob = server.signedIn(as: try await ClubCLI.add("bob", to: server).token)
            for round in 0..<5 {
                let path = "/byteclub/race\(round).txt"
                let base = try await server.put("/1/files_put/dropbox\(path)", Array("base".utf8))
                let rev = try #require(base.object["rev"] as? String)
                async let fromDev = server.put("/1/files_put/dropbox\(path)?parent_rev=\(rev)", Array("dev's edit".utf8))
                async let fromBob = bob.put("/1/files_put/dropbox\(path)?parent_rev=\(rev)", Array("bob's edit".utf8))
                let (dev, other) = try await (fromDev, fromBob)
                #expect(dev.status == 200 && other.status == 200)
                let paths = Set([dev.object["path"] as? String, other.object["path"] as? String].compactMap { $0 })
                let copies = ["/byteclub/race\(round) (dev's conflicted copy).txt", "/byteclub/race\(round) (bob's conflicted copy).txt"]
                #expect(paths.count == 2 && paths.contains(path) && paths.intersection(copies).count == 1, "round \(round): \(paths)")
                // Both bodies are stored, each where its response said.
                for (reply, body) in [(dev, "dev's edit"), (other, "bob's edit")] {
                    let stored = try #require(reply.object["path"] as? String)
                    let encoded = stored.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? stored
                    #expect(try await server.get("/1/files/dropbox\(encoded)").text == body)
                }
                let listing = try await server.get("/1/metadata/dropbox/byteclub")
                let names = (listing.object["contents"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
                #expect(names.filter { $0.hasPrefix("/byteclub/race\(round)") }.count == 2, "\(names)")
            }
        }
    }

    @Test(arguments: Backend.allCases) func chunkedCommitFollowsTheSameRule(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let first = try await server.put("/1/files_put/dropbox/byteclub/big.bin", Bytes.pattern(100))
            let rev = try #require(first.object["rev"] as? String)
            _ = try await server.put("/1/files_put/dropbox/byteclub/big.bin", Bytes.pattern(200))
            let chunk = try await server.put("/1/chunked_upload", Bytes.pattern(300, seed: 3))
            let id = try #require(chunk.object["upload_id"] as? String)
            let commit = try await server.post("/1/commit_chunked_upload/dropbox/byteclub/big.bin", form: ["upload_id": id, "parent_rev": rev])
            #expect(commit.status == 200)
            #expect(commit.object["path"] as? String == "/byteclub/big (dev's conflicted copy).bin")
            #expect(try await server.get("/1/files/dropbox/byteclub/big.bin").body == Bytes.pattern(200))
        }
    }
}
