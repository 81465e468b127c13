import ByteClubKit
import FerryTestSupport
import Foundation
import Testing

/// `byteclub login`, `notes …` against a real byteclub-server, run as the member would.
@Suite("byteclub notes")
struct NotesTests {
    @Test("login checks the token before saving it, keeps it 0600, and logout forgets it")
    func loginAndLogout() async throws {
        try await ClubFixture.with { club in
            let wrong = try await club.run(["login", "--server", club.server.absoluteString, "--token", "not-a-token"], signedIn: false)
            #expect(wrong.status == 3, "a refused token exits 3: \(wrong.output)")
            #expect(wrong.output.contains("sign in again"))
            let file = club.file("config/byteclub/account.json")
            #expect(!FileManager.default.fileExists(atPath: file.path), "a refused token is not saved")

            let right = try await club.run(["login", "--server", club.server.absoluteString, "--token", ClubFixture.token], signedIn: false)
            #expect(right.status == 0, "\(right.output)")
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "the account file is the member's only")
            let listed = try await club.run(["notes"], signedIn: false)
            #expect(listed.status == 0 && listed.output.contains("no notes yet"), "the saved account is used: \(listed.output)")

            let out = try await club.run(["logout"], signedIn: false)
            #expect(out.status == 0 && !FileManager.default.fileExists(atPath: file.path))
            let after = try await club.run(["notes"], signedIn: false)
            #expect(after.status == 3 && after.output.contains("not signed in"), "\(after.output)")
        }
    }

    @Test("a note written with `notes new` is listed, shown and edited; a taken name gets another")
    func writeListShowEdit() async throws {
        try await ClubFixture.with { club in
            let new = try await club.run(["notes", "new", "hello", "--text", "Hi, club!"])
            #expect(new.status == 0 && new.output.contains("saved hello.txt"), "\(new.output)")
            let again = try await club.run(["notes", "new", "hello.txt", "--text", "Hi again"])
            #expect(again.output.contains("hello.txt exists; saved as hello (1).txt"), "\(again.output)")

            let listed = try await club.run(["notes", "--json"])
            let notes = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]]
            #expect(notes?.compactMap { $0["path"] as? String } == ["/byteclub/hello (1).txt", "/byteclub/hello.txt"], "\(listed.output)")

            let shown = try await club.run(["notes", "show", "hello"])
            #expect(shown.output == "Hi, club!\n", "\(shown.output)")
            let edited = try await club.run(["notes", "edit", "hello", "--text", "Hi, edited"])
            #expect(edited.status == 0 && edited.output.contains("saved hello.txt"), "\(edited.output)")
            #expect(try await club.run(["notes", "show", "hello"]).output == "Hi, edited\n")

            // Text from standard input when it is not a terminal.
            let piped = try await club.run(["notes", "new", "piped"], input: "from a pipe\n")
            #expect(piped.status == 0, "\(piped.output)")
            #expect(try await club.run(["notes", "show", "piped"]).output == "from a pipe\n")
        }
    }

    @Test("an edit of a revision another member replaced meanwhile is kept as a conflicted copy, and the other's text stays")
    func conflictedCopy() async throws {
        try await ClubFixture.with { club in
            let account = ByteClubAccount(server: club.server, accessToken: ClubFixture.token)
            let me = ByteClub(account: account, paths: ByteClubPaths(environment: club.environment(member: "me")))
            _ = try await me.saveNote(named: "plan.txt", text: "v1")
            let (_, read) = try await me.readNote(named: "plan.txt")
            let other = try await club.run(["notes", "edit", "plan", "--text", "theirs"], member: "other")
            #expect(other.status == 0, "\(other.output)")
            let mine = try await me.saveNote(named: "plan.txt", text: "mine", parentRev: read.rev)
            #expect(mine.isConflictedCopy, "saved at \(mine.metadata.path)")
            #expect(try await me.readNote(named: "plan.txt").text == "theirs", "the other member's text is not lost")
            #expect(try await me.readNote(named: mine.metadata.name).text == "mine", "mine is not lost either")
        }
    }

    @Test("two members: one writes a note, the other reads it with its author; a revoked member is told to sign in again")
    func twoMembers() async throws {
        try await ClubFixture.with { club in
            let alice = try await club.addMember("alice")
            let bob = try await club.addMember("bob")
            for (member, token) in [("alice", alice), ("bob", bob)] {
                let login = try await club.run(["login", "--server", club.server.absoluteString, "--token", token], member: member, signedIn: false)
                #expect(login.status == 0, "\(login.output)")
            }
            #expect(try await club.run(["notes", "new", "picnic", "--text", "Saturday at noon"], member: "alice", signedIn: false).status == 0)
            let listed = try await club.run(["notes"], member: "bob", signedIn: false)
            #expect(listed.output.contains("picnic.txt") && listed.output.contains("alice"), "bob sees alice's note and that she wrote it: \(listed.output)")
            #expect(try await club.run(["notes", "show", "picnic"], member: "bob", signedIn: false).output == "Saturday at noon\n")

            let revoke = try SpawnedProcess.start(try BuiltProducts.path(of: "byteclub-server"),
                                                  ["accounts", "revoke", "bob", "--data-dir", club.root.appendingPathComponent("data").path], log: nil)
            #expect(try await revoke.exit(within: .seconds(30)) == 0)
            let refused = try await club.run(["notes"], member: "bob", signedIn: false)
            #expect(refused.status == 3 && refused.output.contains("revoked") && refused.output.contains("sign in again"), "\(refused.output)")
        }
    }

    @Test("the service's errors exit with their own status and say what to do")
    func errors() async throws {
        try await ClubFixture.with { club in
            let missing = try await club.run(["notes", "show", "nothing-here"])
            #expect(missing.status == 5 && missing.output.contains("not found: note nothing-here.txt"), "\(missing.output)")
            let expired = try await club.run(["notes"], environment: ["BYTECLUB_ACCESS_TOKEN": "expired"])
            #expect(expired.status == 3 && expired.output.contains("sign in again"), "\(expired.output)")
            let down = try await club.run(["notes"], environment: ["BYTECLUB_SERVER": "http://127.0.0.1:9"])
            #expect(down.status == 8 && down.output.contains("cannot reach the server"), "\(down.output)")
            let usage = try await club.run(["login", "--server", "ftp://x", "--token", "t"], signedIn: false)
            #expect(usage.status == 2, "\(usage.output)")
        }
        try await ClubFixture.with(serverArguments: ["--quota", "10"]) { club in
            let full = try await club.run(["notes", "new", "big", "--text", String(repeating: "x", count: 100)])
            #expect(full.status == 7 && full.output.contains("space is full (507)"), "\(full.output)")
        }
    }

    @Test("a 429 or 503 with a short Retry-After is waited out and said; a long one exits 6")
    func busyServer() async throws {
        try await ClubFixture.with(serverArguments: ["--fault-fail-next", "1", "--fault-fail-status", "503", "--fault-retry-after", "1"]) { club in
            let waited = try await club.run(["notes"])
            #expect(waited.status == 0, "\(waited.output)")
            #expect(waited.output.contains("the server is busy (503); waiting 1 s as it asks"), "\(waited.output)")
        }
        try await ClubFixture.with(serverArguments: ["--fault-fail-next", "1", "--fault-fail-status", "429", "--fault-retry-after", "3600"]) { club in
            let refused = try await club.run(["notes"])
            #expect(refused.status == 6 && refused.output.contains("asks to wait 3600 s"), "\(refused.output)")
        }
    }
}
