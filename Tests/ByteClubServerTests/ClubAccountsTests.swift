import Foundation
import Testing

/// Several members in one club: accounts made with the real `byteclub-server accounts`
/// subcommands against the data directory of a running server, one shared folder, who wrote
/// what (`modifier`), and revoked tokens.
@Suite("Club accounts and the shared folder", .serialized, .postgres)
struct ClubAccountsTests {
    @Test(arguments: Backend.allCases) func membersSeeEachOthersFilesWithTheirModifier(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let alice = server.signedIn(as: try await ClubCLI.add("alice", to: server).token)

            let note = try await server.put("/1/files_put/dropbox/byteclub/welcome.txt", Array("hello club".utf8))
            #expect(note.status == 200)
            let devModifier = try #require(note.object["modifier"] as? [String: Any])
            #expect(devModifier["display_name"] as? String == "dev")
            let devUID = try #require(devModifier["uid"] as? Int)

            let seen = try await alice.get("/1/metadata/dropbox/byteclub")
            #expect(seen.status == 200)
            let contents = try #require(seen.object["contents"] as? [[String: Any]])
            #expect(contents.map { $0["path"] as? String } == ["/byteclub/welcome.txt"])
            #expect((contents.first?["modifier"] as? [String: Any])?["display_name"] as? String == "dev")
            #expect(try await alice.get("/1/files/dropbox/byteclub/welcome.txt").text == "hello club")

            let photo = try await alice.put("/1/files_put/dropbox/byteclub/photo.jpg", Bytes.pattern(1000))
            #expect(photo.status == 200)
            let file = try await server.get("/1/metadata/dropbox/byteclub/photo.jpg")
            let aliceModifier = try #require(file.object["modifier"] as? [String: Any])
            #expect(aliceModifier["display_name"] as? String == "alice")
            #expect(aliceModifier["uid"] as? Int != devUID)
            #expect(try await server.get("/1/files/dropbox/byteclub/photo.jpg").body == Bytes.pattern(1000))

            // Overwriting makes the writer the modifier.
            _ = try await alice.put("/1/files_put/dropbox/byteclub/welcome.txt", Array("hello from alice".utf8))
            let rewritten = try await server.get("/1/metadata/dropbox/byteclub/welcome.txt")
            #expect((rewritten.object["modifier"] as? [String: Any])?["display_name"] as? String == "alice")

            let list = try await ClubCLI.run(["list"], on: server)
            #expect(list.status == 0)
            let lines = list.output.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("dev\t") && $0.contains("club") && $0.contains("1 active, 0 revoked") && $0.contains("development account") })
            #expect(lines.contains { $0.hasPrefix("alice\t") && $0.contains("club") && $0.contains("1 active, 0 revoked") })
            #expect(!list.output.contains(server.token) && !list.output.contains(alice.token), "list never prints a token")
        }
    }

    @Test(arguments: Backend.allCases) func revokedTokensGet401SayingSoWhileTheServerRuns(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let bob = server.signedIn(as: try await ClubCLI.add("bob", to: server).token)
            #expect(try await bob.get("/1/metadata/dropbox").status == 200)

            let revoke = try await ClubCLI.run(["revoke", "bob"], on: server)
            #expect(revoke.status == 0)
            #expect(revoke.output.contains("Revoked 1 token of bob"))
            let refused = try await bob.get("/1/metadata/dropbox")
            #expect(refused.status == 401)
            #expect(refused.object["error"] as? String == "Access token revoked: sign in again to get a new one")
            #expect(refused.header("WWW-Authenticate")?.contains("revoked") == true)
            let upload = try await bob.put("/1/files_put/dropbox/byteclub/late.txt", [1])
            #expect(upload.status == 401)
            #expect((upload.object["error"] as? String)?.contains("revoked") == true)

            // An unknown token is told apart from a revoked one.
            let unknown = try await server.signedIn(as: "no-such-token").get("/1/metadata/dropbox")
            #expect(unknown.status == 401)
            #expect(unknown.object["error"] as? String == "Invalid or expired access token")

            // A fresh token works; the revoked one stays revoked; the development account is untouched.
            let fresh = try await ClubCLI.run(["token", "bob"], on: server)
            let token = try #require(fresh.value(of: "BYTECLUB_ACCESS_TOKEN"))
            #expect(try await server.signedIn(as: token).put("/1/files_put/dropbox/byteclub/back.txt", [2]).status == 200)
            #expect(try await bob.get("/1/metadata/dropbox").status == 401)
            #expect(try await server.get("/1/metadata/dropbox/byteclub/back.txt").status == 200)

            let list = try await ClubCLI.run(["list"], on: server)
            #expect(list.output.split(separator: "\n").contains { $0.hasPrefix("bob\t") && $0.contains("1 active, 1 revoked") })
        }
    }

    @Test func accountsSubcommandsRefuseWhatTheyCannotDo() async throws {
        try await TestServer.with { server in
            _ = try await ClubCLI.add("carol", to: server)
            let again = try await ClubCLI.run(["add", "carol"], on: server)
            #expect(again.status != 0)
            #expect(again.errors.contains("An account named 'carol' already exists"))
            let dev = try await ClubCLI.run(["add", "dev"], on: server)
            #expect(dev.status != 0)
            let badName = try await ClubCLI.run(["add", "../x"], on: server)
            #expect(badName.status != 0)
            #expect(badName.errors.contains("letters, digits"))
            let unknown = try await ClubCLI.run(["revoke", "nobody"], on: server)
            #expect(unknown.status != 0)
            #expect(unknown.errors.contains("No account named 'nobody'"))
            let missing = try await ClubCLI.run(["list"], dataDirectory: server.dataDirectory + "/not-there")
            #expect(missing.status != 0)
            #expect(missing.errors.contains("no byteclub.sqlite"))
            #expect(!FileManager.default.fileExists(atPath: server.dataDirectory + "/not-there"))
        }
    }

    @Test func aMemberAddedBeforeTheFirstStartJoinsTheDevelopmentAccountsClub() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dave = try await ClubCLI.add("dave", dataDirectory: directory)
        try await ServerProcessTests.withServer(dataDirectory: directory) { running in
            let text = ServerProcessTests.read(running.output)
            // The dev account was made by `accounts add`, with a random token: printed at start all the same.
            #expect(text.contains("Development account:"))
            let devToken = try #require(text.split(separator: "\n").first { $0.contains("BYTECLUB_ACCESS_TOKEN=") }
                .map { String($0.split(separator: "=", maxSplits: 1)[1]) })
            let put = try await ServerProcessTests.request(running.port, "PUT", "/1/files_put/dropbox/byteclub/d.txt", body: [1], token: dave.token)
            #expect(put.status == 200)
            let listed = try await ServerProcessTests.request(running.port, "GET", "/1/metadata/dropbox/byteclub", token: devToken)
            #expect(listed.text.contains("\"display_name\":\"dave\""))
        }
    }
}
