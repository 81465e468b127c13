import FerryTestSupport
import Foundation
import Testing

/// Two real `byteclub-server` processes on different ports sharing one PostgreSQL database and
/// one data directory (the blobs): one club, served consistently by both.
@Suite("Two instances on one PostgreSQL database", .serialized, .postgres)
struct MultiInstanceTests {
    /// Runs `body` with instances A and B on a fresh database and data directory; both are
    /// stopped afterwards, whether `body` returned or threw.
    static func withTwoInstances(_ body: (ServerProcessTests.Running, ServerProcessTests.Running, _ url: String, _ directory: String) async throws -> Void) async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = try await PostgresScope.createDatabase()
        try await ServerProcessTests.withServer(dataDirectory: directory, arguments: ["--database-url", url]) { a in
            try await ServerProcessTests.withServer(dataDirectory: directory, arguments: ["--database-url", url]) { b in
                try await body(a, b, url, directory)
            }
        }
    }

    @Test func aNoteWrittenThroughOneIsListedByTheOther() async throws {
        try await Self.withTwoInstances { a, b, _, directory in
            #expect(ServerProcessTests.read(b.output).contains("Development account:"), "B found the account A made")
            // B's start cleaned the shared folder: A's temp folder (A is running) is still there.
            let instances = try FileManager.default.contentsOfDirectory(atPath: directory + "/files/tmp")
            #expect(instances.count == 2, "one temp folder per running instance: \(instances)")

            let put = try await ServerProcessTests.request(a.port, "PUT", "/1/files_put/dropbox/byteclub/hello.txt", body: Array("from A".utf8))
            #expect(put.status == 200)
            let written = ContinuousClock.now
            let listing = try await eventually("B to list the note written through A", timeout: .seconds(5), every: .milliseconds(5)) { () -> String? in
                let reply = try await ServerProcessTests.request(b.port, "GET", "/1/metadata/dropbox/byteclub")
                return reply.text.contains("hello.txt") ? reply.text : nil
            }
            let elapsed = ContinuousClock.now - written
            print("MultiInstanceTests: a note written on A was listed on B after \(elapsed)")
            #expect(listing.contains("\"path\":\"/byteclub/hello.txt\""))
            #expect(try await ServerProcessTests.request(b.port, "GET", "/1/files/dropbox/byteclub/hello.txt").text == "from A")
        }
    }

    @Test func aLongPollOnOneWakesForAWriteThroughTheOther() async throws {
        try await Self.withTwoInstances { a, b, _, _ in
            let delta = try await ServerProcessTests.request(b.port, "POST", "/1/delta")
            let cursor = try #require(delta.text.firstMatch(of: /"cursor":"([^"]+)"/).map { String($0.1) }, "\(delta.text)")
            let waiting = Task { () throws -> (RawHTTP.Response, ContinuousClock.Instant) in
                let reply = try await ServerProcessTests.request(b.port, "GET", "/1/longpoll_delta?cursor=\(cursor)&timeout=30")
                return (reply, ContinuousClock.now)
            }
            try await Task.sleep(for: .milliseconds(300))
            let put = try await ServerProcessTests.request(a.port, "PUT", "/1/files_put/dropbox/byteclub/wake.txt", body: [1])
            #expect(put.status == 200)
            let written = ContinuousClock.now
            let (reply, answered) = try await waiting.value
            print("MultiInstanceTests: B's long-poll answered \(answered - written) after A's write")
            #expect(reply.text.contains("\"changes\":true"))
            #expect(answered - written < .milliseconds(1200), "answered \(answered - written) after the write on A")
        }
    }

    @Test func twoMembersSavingAtOnceThroughDifferentInstancesGetOneFileAndOneCopy() async throws {
        try await Self.withTwoInstances { a, b, url, directory in
            let bob = try await ClubCLI.add("bob", dataDirectory: directory, databaseURL: url)
            for round in 0..<8 {
                let path = "/1/files_put/dropbox/byteclub/race\(round).txt"
                let base = try await ServerProcessTests.request(a.port, "PUT", path, body: Array("base".utf8))
                let rev = try #require(base.text.firstMatch(of: /"rev":"([0-9a-f]+)"/)?.1)
                async let viaA = ServerProcessTests.request(a.port, "PUT", path + "?parent_rev=\(rev)", body: Array("dev's edit".utf8))
                async let viaB = ServerProcessTests.request(b.port, "PUT", path + "?parent_rev=\(rev)", body: Array("bob's edit".utf8), token: bob.token)
                let (first, second) = try await (viaA, viaB)
                #expect(first.status == 200 && second.status == 200)
                let paths = [first.text, second.text].compactMap { $0.firstMatch(of: /"path":"([^"]+)"/).map { String($0.1) } }
                let copies = paths.filter { $0.contains("conflicted copy") }
                #expect(Set(paths).count == 2 && paths.contains("/byteclub/race\(round).txt") && copies.count == 1, "round \(round): \(paths)")
                let listing = try await ServerProcessTests.request(b.port, "GET", "/1/metadata/dropbox/byteclub")
                #expect(listing.text.components(separatedBy: "\"path\":\"/byteclub/race\(round)").count - 1 == 2, "round \(round): \(listing.text)")
            }
        }
    }

    @Test func aMemberAddedOnTheDatabaseSignsInOnBothAndARevocationCountsOnBoth() async throws {
        try await Self.withTwoInstances { a, b, url, directory in
            let carol = try await ClubCLI.add("carol", dataDirectory: directory, databaseURL: url)
            for port in [a.port, b.port] {
                #expect(try await ServerProcessTests.request(port, "GET", "/1/metadata/dropbox/", token: carol.token).status == 200)
            }
            let list = try await ClubCLI.run(["list"], dataDirectory: directory, databaseURL: url)
            #expect(list.status == 0 && list.output.contains("carol") && list.output.contains("dev"), "\(list.output) \(list.errors)")
            let revoke = try await ClubCLI.run(["revoke", "carol"], dataDirectory: directory, databaseURL: url)
            #expect(revoke.status == 0, "\(revoke.output) \(revoke.errors)")
            for port in [a.port, b.port] {
                let refused = try await ServerProcessTests.request(port, "GET", "/1/metadata/dropbox/", token: carol.token)
                #expect(refused.status == 401)
                #expect(refused.text.contains("revoked"))
            }
        }
    }

    @Test func anOAuthCodeIssuedThroughOneIsRedeemedOnceThroughTheOther() async throws {
        try await Self.withTwoInstances { a, b, url, directory in
            let viaA = OAuthFlow(server: Self.testServer(a, directory, url))
            let viaB = OAuthFlow(server: Self.testServer(b, directory, url), state: viaA.state, verifier: viaA.verifier)
            // The approve/deny page shown by B, approved through A: A issues the code.
            let (_, csrf) = try await viaB.consentPage(token: Self.devToken)
            let approved = try await viaA.post("/oauth2/authorize", ["csrf_token": csrf, "decision": "approve"], cookie: Self.devToken)
            #expect(approved.status == 302, "\(approved.text)")
            let callback = OAuthFlow.query(of: try #require(approved.header("Location")))
            let code = try #require(callback["code"], "\(callback)")
            #expect(callback["state"] == viaA.state)
            let replayed = try await viaB.post("/oauth2/authorize", ["csrf_token": csrf, "decision": "approve"], cookie: Self.devToken)
            #expect(replayed.status == 403 && replayed.header("Location") == nil, "the page's token worked once, across instances")

            let first = try await viaB.redeem(code)
            #expect(first.status == 200 && first.object["account_name"] as? String == "dev", "\(first.text)")
            let token = try #require(first.object["access_token"] as? String)
            for port in [a.port, b.port] {
                #expect(try await ServerProcessTests.request(port, "GET", "/1/metadata/dropbox/", token: token).status == 200)
            }
            let second = try await viaA.redeem(code)
            #expect(second.status == 400 && second.object["error"] as? String == "invalid_grant", "\(second.text)")
            for port in [a.port, b.port] {
                let refused = try await ServerProcessTests.request(port, "GET", "/1/metadata/dropbox/", token: token)
                #expect(refused.status == 401 && refused.text.contains("revoked"), "\(refused.text)")
                #expect(try await ServerProcessTests.request(port, "GET", "/1/metadata/dropbox/").status == 200, "dev's own token stays valid")
            }

            // Redeemed at both at once: one token (the row lock makes the other wait, then refuses).
            for round in 0..<4 {
                let code = try await viaA.code(token: Self.devToken)
                async let atA = viaA.redeem(code)
                async let atB = viaB.redeem(code)
                let replies = try await [atA, atB]
                #expect(replies.filter { $0.status == 200 }.count == 1, "round \(round): \(replies.map(\.text))")
                #expect(replies.filter { $0.object["error"] as? String == "invalid_grant" }.count == 1, "round \(round): \(replies.map(\.text))")
            }
        }
    }

    /// The dev account's token of ``ServerProcessTests/start(dataDirectory:arguments:)``.
    static let devToken = "kill-token"

    /// A running instance as a ``TestServer``, for ``OAuthFlow``.
    static func testServer(_ instance: ServerProcessTests.Running, _ directory: String, _ url: String) -> TestServer {
        TestServer(base: "http://127.0.0.1:\(instance.port)", port: instance.port, token: devToken, clientID: "", appKey: "",
                   dataDirectory: directory, databaseURL: url)
    }

    @Test func anUnreachableDatabaseIsAClearErrorWithoutThePassword() async throws {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = URL(fileURLWithPath: directory + "/out.log")
        for url in ["postgres://byteclub:sekrit@127.0.0.1:1/club", "mysql://byteclub:sekrit@127.0.0.1/club"] {
            let child = try SpawnedProcess.start(try BuiltProducts.path(of: "byteclub-server"),
                                                 ["--port", "0", "--data-dir", directory, "--database-url", url], log: log)
            let status = try await child.exit(within: .seconds(20))
            let output = child.output
            #expect(status == 1, "exit status \(status): \(output)")
            #expect(output.contains("Error:") && output.contains("PostgreSQL") && output.contains("127.0.0.1"), "\(output)")
            #expect(!output.contains("sekrit"), "the password is never printed: \(output)")
        }
    }
}
