import FerryTestSupport
import Foundation
import Testing

/// `byteclub login --server URL --no-browser` end to end: the real app prints the sign-in
/// page's URL and listens on 127.0.0.1; headless Chromium (driven through the DevTools
/// protocol) opens it, signs in as a member and clicks Approve or Deny on the real server's
/// page; the browser's redirect reaches the app, which redeems the code through Ferry.
@Suite("byteclub login in a browser", .serialized)
struct BrowserLoginTests {
    @Test("Approve: byteclub exits 0, saves the member's new token (0600), and notes work with it; Deny: exit 3")
    func approveThenDeny() async throws {
        try #require(HeadlessChromium.executable != nil, "chromium is not installed: run scripts/install-deps")
        try await ClubFixture.with { club in
            let aliceToken = try await club.addMember("alice")
            let work = club.root.appendingPathComponent("chromium").path
            let browser = try await HeadlessChromium.start(work: work)
            do {
                let login = try club.start(["login", "--server", club.server.absoluteString, "--no-browser"], member: "alice", signedIn: false)
                defer { login.kill() }
                let page = try await Self.authorizeURL(printedBy: login)
                let results = try await browser.run([
                    .navigate(page), .waitFor("#access_token"), .type(aliceToken, into: "#access_token"), .click("#signin"),
                    .waitFor("#approve"), .click("#approve"), .waitFor("#result"), .text("#result"),
                ])
                #expect(results[7]?.contains("You can close this tab") == true, "the app's own page: \(results)")
                let status = try await login.exit(within: .seconds(30))
                #expect(status == 0, "\(login.output)")
                #expect(login.output.contains("signed in to \(club.server.absoluteString) as alice"), "\(login.output)")

                let file = club.file("config/byteclub/account.json", member: "alice")
                let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
                #expect(mode == 0o600, "the account file is the member's only")
                let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
                let token = try #require(saved["accessToken"] as? String)
                #expect(token != aliceToken && saved["member"] as? String == "alice", "a new token of alice's: \(saved)")

                let note = try await club.run(["notes", "new", "oauth", "--text", "signed in with a browser"], member: "alice", signedIn: false)
                #expect(note.status == 0, "\(note.output)")
                let notes = try await club.run(["notes"], member: "alice", signedIn: false)
                #expect(notes.status == 0 && notes.output.contains("oauth.txt") && notes.output.contains("alice"), "\(notes.output)")

                // Deny (the browser is signed in already): exit 3, saying so; the saved account stays.
                let denied = try club.start(["login", "--server", club.server.absoluteString, "--no-browser"], member: "alice", signedIn: false)
                defer { denied.kill() }
                let refusal = try await browser.run([
                    .navigate(try await Self.authorizeURL(printedBy: denied)), .waitFor("#deny"), .click("#deny"),
                    .waitFor("#result"), .text("#result"),
                ])
                #expect(refusal[4]?.contains("denied") == true, "\(refusal)")
                #expect(try await denied.exit(within: .seconds(30)) == 3, "\(denied.output)")
                #expect(denied.output.contains("byteclub: not signed in: the sign-in was denied on the server's page"), "\(denied.output)")
                #expect(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any] != nil)
            } catch {
                await browser.stop()
                throw error
            }
            await browser.stop()
            #expect(processes(marker: work).isEmpty, "no Chromium process is left behind")
        }
    }

    @Test("no answer within --wait: exit 3, saying what it waited for")
    func noAnswer() async throws {
        try await ClubFixture.with { club in
            let login = try await club.run(["login", "--server", club.server.absoluteString, "--no-browser", "--wait", "1"], signedIn: false)
            #expect(login.status == 3, "\(login.output)")
            #expect(login.output.contains("no answer came back from the browser within 1 s"), "\(login.output)")
        }
    }

    /// The sign-in page's URL, from the line `byteclub login` prints (10 s at most).
    static func authorizeURL(printedBy login: SpawnedProcess) async throws -> String {
        try await eventually("byteclub login to print the sign-in page's URL", timeout: .seconds(10), observed: login.output) {
            login.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("http") && $0.contains("/oauth2/authorize?") }
        }
    }
}
