import ArgumentParser
import ByteClubKit
import Foundation

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign in to a club's server: in a browser (OAuth 2.0 with PKCE), or with a token.",
        discussion: """
            Without --token, byteclub listens on 127.0.0.1 for the browser's answer, opens the server's \
            sign-in page with xdg-open (the URL is printed too), and waits up to --wait seconds for you to \
            approve it there. Denied or no answer: exit 3. Ctrl-C: exit 130.
            """)

    @Option(help: "The server's URL, e.g. http://127.0.0.1:8080.") var server: String
    @Option(help: "An access token the server's admin made (byteclub-server accounts add/token); skips the browser.") var token: String?
    @Flag(name: .customLong("no-browser"), help: "Only print the sign-in page's URL; do not run xdg-open.") var noBrowser = false
    @Option(help: "Seconds to wait for the browser's answer.") var wait: Int = 300

    func validate() throws {
        guard (1...3600).contains(wait) else { throw ValidationError("--wait must be 1...3600 seconds") }
    }

    func run() async throws {
        guard let url = URL(string: server), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw ByteClubError.usage("not an http(s) URL: \(server)")
        }
        let account: ByteClubAccount
        if let token {
            guard !token.isEmpty else { throw ByteClubError.usage("--token is empty") }
            account = ByteClubAccount(server: url, accessToken: token)
            // Checked before it is saved: a wrong token is said now, not at the first note.
            do {
                _ = try await ByteClub(account: account).notes()
            } catch ByteClubError.signInAgain(let detail) {
                throw ByteClubError.signInAgain("it refused this token: \(detail)")
            }
        } else {
            account = try await signInInBrowser(url)
        }
        let file = AccountFile()
        try file.save(account)
        let who = account.member.map { " as \($0)" } ?? ""
        print("signed in to \(url.absoluteString)\(who); the account is in \(file.url.path)")
    }

    /// The browser's way: listen, open the page, wait for the code, redeem it.
    func signInInBrowser(_ url: URL) async throws -> ByteClubAccount {
        let signIn = try BrowserSignIn(server: url)
        let page = signIn.authorizeURL.absoluteString
        if noBrowser || !Self.openInBrowser(page) {
            say(line: "To sign in, open this page in a browser and approve byteclub:\n  \(page)")
        } else {
            say(line: "Opened the sign-in page in your browser; approve byteclub there. If it did not open:\n  \(page)")
        }
        say(line: "Waiting for the browser (up to \(wait) s; Ctrl-C cancels)…")
        let wait = self.wait
        let code = try await Interrupt.cancelling { try await signIn.waitForApproval(timeout: .seconds(wait)) }
        return try await signIn.redeem(code)
    }

    /// Runs `xdg-open URL`; whether it started and said it opened the page (within 10 s).
    static func openInBrowser(_ url: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        return !process.isRunning && process.terminationStatus == 0
    }
}

/// A line on standard output at once (a pipe or a file is read while byteclub waits).
func say(line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
