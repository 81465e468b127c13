import FerryTestSupport
import Foundation
import Testing

/// The authorize page in a real browser: headless Chromium, driven through the DevTools
/// protocol (`HeadlessChromium`), signs in with the form, clicks Approve with the mouse and is
/// sent to the app's loopback redirect with a code that redeems; then Deny.
@Suite("OAuth sign-in in headless Chromium", .serialized)
struct OAuthBrowserTests {
    @Test func approveAndDenyInChromium() async throws {
        try #require(HeadlessChromium.executable != nil, "chromium is not installed: run scripts/install-deps")
        let work = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        try await TestServer.with { server in
            let browser = try await HeadlessChromium.start(work: work)
            do {
                var flow = OAuthFlow(server: server)
                flow.redirectURI = "http://127.0.0.1:\(Self.closedPort())/callback"
                let results = try await browser.run([
                    .navigate(server.base + flow.authorizePath()), .waitFor("#access_token"),
                    .type(server.token, into: "#access_token"), .click("#signin"),
                    .waitFor("#approve"), .text("#member"), .text("#client"), .click("#approve"),
                    .waitForRequest(prefix: flow.redirectURI + "?"),
                ])
                #expect(results[5] == "dev" && results[6] == "Byte Club", "\(results)")
                let callback = OAuthFlow.query(of: try #require(results[8]))
                #expect(callback["state"] == flow.state, "\(callback)")
                let token = try await flow.redeem(try #require(callback["code"]))
                #expect(token.status == 200 && token.object["account_name"] as? String == "dev", "\(token.text)")

                // Signed in already (the cookie): straight to the page; Deny.
                var denied = OAuthFlow(server: server)
                denied.redirectURI = flow.redirectURI
                let refusal = try await browser.run([
                    .navigate(server.base + denied.authorizePath()), .waitFor("#deny"), .click("#deny"),
                    .waitForRequest(prefix: denied.redirectURI + "?"),
                ])
                let answer = OAuthFlow.query(of: try #require(refusal[3]))
                #expect(answer["error"] == "access_denied" && answer["state"] == denied.state && answer["code"] == nil, "\(answer)")
            } catch {
                await browser.stop()
                throw error
            }
            await browser.stop()
            #expect(processes(marker: work).isEmpty, "no Chromium process is left behind")
        }
    }

    /// A loopback port for the redirect: whether anything listens there does not matter, the
    /// browser's request shows the code (below the ephemeral range, away from the servers).
    static func closedPort() -> Int { Int.random(in: 20000...29999) }
}
