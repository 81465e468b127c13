import ByteClubServer
import Foundation
import Testing

/// OAuth 2.0 authorization code with PKCE and loopback redirects (RFC 6749, 7636, 8252) over
/// real HTTP against a real server: the authorize page, approve and deny, the token endpoint
/// and each of its refusals, single-use and short-lived codes, CSRF, redirect URI rules. The
/// tests that touch the store run on SQLite and on PostgreSQL.
@Suite("OAuth 2.0 sign-in", .postgres)
struct OAuthTests {
    @Test(arguments: Backend.allCases) func authorizePageAsksToSignInThenShowsApproveAndDeny(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let flow = OAuthFlow(server: server)
            let signIn = try await flow.get(flow.authorizePath())
            #expect(signIn.status == 200 && signIn.text.contains("id=access_token"), "\(signIn.text)")
            #expect(signIn.header("Cache-Control") == "no-store" && signIn.header("X-Frame-Options") == "DENY")

            let wrong = try await flow.post("/oauth2/signin", ["access_token": "nope", "return_to": flow.authorizePath()])
            #expect(wrong.status == 401 && wrong.text.contains("not a valid access token") && wrong.header("Set-Cookie") == nil)
            let openRedirect = try await flow.post("/oauth2/signin", ["access_token": server.token, "return_to": "https://elsewhere.example/"])
            #expect(openRedirect.status == 400 && openRedirect.header("Location") == nil)

            let signedIn = try await flow.post("/oauth2/signin", ["access_token": server.token, "return_to": flow.authorizePath()])
            #expect(signedIn.status == 303 && signedIn.header("Location") == flow.authorizePath())
            #expect(signedIn.header("Set-Cookie")?.hasPrefix("byteclub_token=\(server.token);") == true)
            #expect(signedIn.header("Set-Cookie")?.contains("HttpOnly") == true)

            let (consent, csrf) = try await flow.consentPage(token: server.token)
            #expect(consent.text.contains("<b id=client>Byte Club</b> sign in as <b id=member>dev</b>"), "\(consent.text)")
            #expect(consent.text.contains("id=approve") && consent.text.contains("id=deny") && csrf.count >= 32)
            #expect(consent.header("Cache-Control") == "no-store" && consent.header("Content-Security-Policy") == "frame-ancestors 'none'")
        }
    }

    @Test(arguments: Backend.allCases) func approvedCodeGivesATokenThatWorksOnTheFilesAPIAndIsListed(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let alice = try await ClubCLI.add("alice", to: server).token
            let flow = OAuthFlow(server: server)
            let code = try await flow.code(token: alice)
            #expect(!code.isEmpty)
            let reply = try await flow.redeem(code)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.header("Cache-Control") == "no-store" && reply.header("Content-Type") == "application/json")
            #expect(reply.object["token_type"] as? String == "bearer")
            #expect(reply.object["account_name"] as? String == "alice")
            #expect(reply.object["uid"] as? Int != nil)
            let token = try #require(reply.object["access_token"] as? String)
            #expect(token != alice)

            let put = try await server.signedIn(as: token).put("/1/files_put/dropbox/byteclub/oauth.txt", Array("signed in".utf8))
            #expect(put.status == 200)
            #expect((put.object["modifier"] as? [String: Any])?["display_name"] as? String == "alice")
            let list = try await ClubCLI.run(["list"], on: server)
            #expect(list.output.split(separator: "\n").contains { $0.hasPrefix("alice\t") && $0.contains("2 active") }, "\(list.output)")

            // `accounts revoke` revokes tokens issued through OAuth too.
            _ = try await ClubCLI.run(["revoke", "alice"], on: server)
            #expect(try await server.signedIn(as: token).get("/1/metadata/dropbox").status == 401)
        }
    }

    @Test(arguments: Backend.allCases) func denyRedirectsWithAccessDeniedAndState(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let flow = OAuthFlow(server: server)
            let query = try await flow.decide("deny", token: server.token)
            #expect(query["error"] == "access_denied" && query["state"] == flow.state && query["code"] == nil, "\(query)")
        }
    }

    @Test(arguments: Backend.allCases) func aWrongVerifierIsInvalidGrant(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let flow = OAuthFlow(server: server)
            let code = try await flow.code(token: server.token)
            let wrong = try await flow.redeem(code, ["code_verifier": String(repeating: "w", count: 50)])
            #expect(wrong.status == 400 && wrong.object["error"] as? String == "invalid_grant", "\(wrong.text)")
            #expect(wrong.header("Cache-Control") == "no-store")
            let malformed = try await flow.redeem(code, ["code_verifier": "short"])
            #expect(malformed.object["error"] as? String == "invalid_request", "\(malformed.text)")
            // A wrong verifier does not use the code up: the app with the right one still gets its token.
            #expect(try await flow.redeem(code).status == 200)
        }
    }

    @Test(arguments: Backend.allCases) func aCodeUsedTwiceIsRefusedAndRevokesTheTokenItGave(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let flow = OAuthFlow(server: server)
            let code = try await flow.code(token: server.token)
            let first = try await flow.redeem(code)
            let token = try #require(first.object["access_token"] as? String)
            #expect(try await server.signedIn(as: token).get("/1/metadata/dropbox").status == 200)

            let second = try await flow.redeem(code)
            #expect(second.status == 400 && second.object["error"] as? String == "invalid_grant", "\(second.text)")
            let refused = try await server.signedIn(as: token).get("/1/metadata/dropbox")
            #expect(refused.status == 401 && (refused.object["error"] as? String)?.contains("revoked") == true)
            #expect(try await server.get("/1/metadata/dropbox").status == 200, "the member's other tokens stay valid")
        }
    }

    @Test(arguments: Backend.allCases) func aCodeRedeemedFourTimesAtOnceGivesOneTokenWhichIsThenRevoked(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let flow = OAuthFlow(server: server)
            let code = try await flow.code(token: server.token)
            let replies = try await withThrowingTaskGroup(of: TestServer.Reply.self) { group in
                for _ in 0..<4 { group.addTask { try await flow.redeem(code) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let issued = replies.filter { $0.status == 200 }
            #expect(issued.count == 1, "\(replies.map(\.text))")
            #expect(replies.filter { $0.status == 400 && $0.object["error"] as? String == "invalid_grant" }.count == 3, "\(replies.map(\.text))")
            // The later redemptions found the code used, so the token the first got is revoked.
            let token = try #require(issued.first?.object["access_token"] as? String)
            #expect(try await server.signedIn(as: token).get("/1/metadata/dropbox").status == 401)
        }
    }

    @Test(arguments: Backend.allCases) func anExpiredCodeIsInvalidGrant(backend: Backend) async throws {
        try await TestServer.with(backend: backend, { $0.oauthCodeLifetime = 0.3 }) { server in
            let flow = OAuthFlow(server: server)
            let code = try await flow.code(token: server.token)
            try await Task.sleep(for: .milliseconds(600))
            let reply = try await flow.redeem(code)
            #expect(reply.status == 400 && reply.object["error"] as? String == "invalid_grant")
            #expect((reply.object["error_description"] as? String)?.contains("expired") == true, "\(reply.text)")
        }
    }

    @Test(arguments: Backend.allCases) func untrustedClientsAndRedirectsAreShownNeverRedirected(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let flow = OAuthFlow(server: server)
            for (overrides, words) in [
                (["client_id": "stranger"], "unknown client_id"),
                (["client_id": nil], "client_id is missing"),
                (["redirect_uri": nil], "no redirect_uri"),
                (["redirect_uri": "http://127.0.0.1.evil.example/callback"], "not registered"),
                (["redirect_uri": "http://localhost:50000/callback"], "not registered"),
                (["redirect_uri": "http://127.0.0.1:50000/other"], "not registered"),
                (["redirect_uri": "https://127.0.0.1/callback"], "not registered"),
                (["redirect_uri": "http://127.0.0.2:50000/callback"], "not registered"),
                (["redirect_uri": "http://127.0.0.1:50000/callback#x"], "not registered"),
            ] as [([String: String?], String)] {
                let page = try await flow.get(flow.authorizePath(overrides), cookie: server.token)
                #expect(page.status == 400 && page.header("Location") == nil, "\(overrides)")
                #expect(page.text.contains(words), "\(overrides): \(page.text)")
            }
        }
    }

    @Test(arguments: Backend.allCases) func loopbackRedirectsMatchOnAnyPort(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            for redirect in ["http://127.0.0.1:1024/callback", "http://127.0.0.1:65535/callback", "http://127.0.0.1/callback",
                             "http://[::1]:41234/callback"] {
                var flow = OAuthFlow(server: server)
                flow.redirectURI = redirect
                let code = try await flow.code(token: server.token)
                #expect(try await flow.redeem(code).status == 200, "\(redirect)")
                // The token request must name the very redirect URI of the authorization request.
                let other = try await flow.code(token: server.token)
                let mismatch = try await flow.redeem(other, ["redirect_uri": "http://127.0.0.1:2/callback"])
                #expect(mismatch.object["error"] as? String == "invalid_grant", "\(redirect)")
            }
        }
    }

    @Test(arguments: Backend.allCases) func plainOrMissingChallengesAndOtherResponseTypesGoBackAsErrors(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let flow = OAuthFlow(server: server)
            for (overrides, error) in [
                (["code_challenge_method": "plain"], "invalid_request"),
                (["code_challenge_method": nil], "invalid_request"),
                (["code_challenge": nil], "invalid_request"),
                (["code_challenge": "too-short"], "invalid_request"),
                (["response_type": "token"], "unsupported_response_type"),
                (["response_type": nil], "invalid_request"),
            ] as [([String: String?], String)] {
                let reply = try await flow.get(flow.authorizePath(overrides), cookie: server.token)
                #expect(reply.status == 302, "\(overrides): \(reply.text)")
                let location = try #require(reply.header("Location"))
                #expect(location.hasPrefix(flow.redirectURI + "?"))
                let query = OAuthFlow.query(of: location)
                #expect(query["error"] == error && query["state"] == flow.state && query["code"] == nil, "\(overrides): \(query)")
            }
        }
    }

    @Test(arguments: Backend.allCases) func theApproveFormNeedsItsOwnMembersCSRFToken(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let alice = try await ClubCLI.add("alice", to: server).token
            let flow = OAuthFlow(server: server)
            let missing = try await flow.post("/oauth2/authorize", ["decision": "approve"], cookie: server.token)
            #expect(missing.status == 403 && missing.header("Location") == nil)
            let (_, csrf) = try await flow.consentPage(token: server.token)
            let forged = try await flow.post("/oauth2/authorize", ["csrf_token": "guess", "decision": "approve"], cookie: server.token)
            #expect(forged.status == 403 && forged.header("Location") == nil)
            let otherMember = try await flow.post("/oauth2/authorize", ["csrf_token": csrf, "decision": "approve"], cookie: alice)
            #expect(otherMember.status == 403 && otherMember.header("Location") == nil, "another member's page is not alice's")
            let signedOut = try await flow.post("/oauth2/authorize", ["csrf_token": csrf, "decision": "approve"])
            #expect(signedOut.status == 403 && signedOut.header("Location") == nil)

            let (_, fresh) = try await flow.consentPage(token: server.token)
            let approved = try await flow.post("/oauth2/authorize", ["csrf_token": fresh, "decision": "approve"], cookie: server.token)
            #expect(approved.status == 302)
            let replayed = try await flow.post("/oauth2/authorize", ["csrf_token": fresh, "decision": "approve"], cookie: server.token)
            #expect(replayed.status == 403 && replayed.header("Location") == nil, "a page's token works once")
        }
    }

    @Test(arguments: Backend.allCases) func theTokenEndpointRefusesAsRFC6749Says(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let flow = OAuthFlow(server: server)
            let code = try await flow.code(token: server.token)
            for (overrides, status, error) in [
                (["grant_type": "password"], 400, "unsupported_grant_type"),
                (["grant_type": nil], 400, "invalid_request"),
                (["client_id": "stranger"], 401, "invalid_client"),
                (["code_verifier": nil], 400, "invalid_request"),
                (["code": "not-a-code"], 400, "invalid_grant"),
            ] as [([String: String?], Int, String)] {
                let reply = try await flow.redeem(code, overrides)
                #expect(reply.status == status && reply.object["error"] as? String == error, "\(overrides): \(reply.text)")
                #expect(reply.object["error_description"] is String && reply.header("Cache-Control") == "no-store")
            }
            let json = try await flow.post("/oauth2/token", ["grant_type": "authorization_code"], contentType: "application/json")
            #expect(json.status == 400 && json.object["error"] as? String == "invalid_request")
            #expect(try await flow.redeem(code).status == 200, "the refusals left the code usable")
        }
    }

    @Test(arguments: Backend.allCases) func clientsAreRegisteredAndListedWithTheCLI(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let added = try await ClubCLI.run(["add", "notes-web", "--name", "Notes", "--redirect", "https://notes.example/cb",
                                               "http://127.0.0.1/notes"], on: server, command: "clients")
            #expect(added.status == 0, "\(added.output) \(added.errors)")
            let refused = try await ClubCLI.run(["add", "bad", "--redirect", "http://notes.example/cb"], on: server, command: "clients")
            #expect(refused.status != 0 && refused.errors.contains("Not a redirect URI"), "\(refused.errors)")
            let list = try await ClubCLI.run(["list"], on: server, command: "clients")
            let lines = list.output.split(separator: "\n")
            #expect(lines.contains { $0.hasPrefix("byteclub\tByte Club\t") && $0.hasSuffix("http://127.0.0.1/callback http://[::1]/callback") })
            #expect(lines.contains { $0.hasPrefix("notes-web\tNotes\t") && $0.hasSuffix("http://127.0.0.1/notes https://notes.example/cb") })
            #expect(!lines.contains { $0.hasPrefix("bad\t") })

            // The running server takes the new client at once, its loopback URI on any port.
            var flow = OAuthFlow(server: server)
            flow.clientID = "notes-web"
            flow.redirectURI = "http://127.0.0.1:3000/notes"
            #expect(try await flow.redeem(try await flow.code(token: server.token)).status == 200)
        }
    }

    @Test func redirectURIRules() {
        #expect(RedirectURIs.matches(registered: "http://127.0.0.1/callback", requested: "http://127.0.0.1:53124/callback"))
        #expect(RedirectURIs.matches(registered: "http://[::1]/callback", requested: "http://[::1]:53124/callback"))
        #expect(!RedirectURIs.matches(registered: "http://127.0.0.1/callback", requested: "http://127.0.0.1:53124/callback?x=1"))
        #expect(!RedirectURIs.matches(registered: "http://localhost/callback", requested: "http://localhost:53124/callback"))
        #expect(!RedirectURIs.matches(registered: "https://notes.example/cb", requested: "https://notes.example:8443/cb"))
        #expect(RedirectURIs.matches(registered: "https://notes.example/cb", requested: "https://notes.example/cb"))
        #expect(RedirectURIs.isRegistrable("org.example.app:/callback") && !RedirectURIs.isRegistrable("http://example.com/cb"))
        #expect(!RedirectURIs.isRegistrable("https://notes.example/cb#frag") && !RedirectURIs.isRegistrable("callback"))
    }
}
