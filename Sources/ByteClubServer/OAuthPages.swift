import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The pages of `/oauth2/authorize`: sign in, approve or deny, and the errors that are shown
/// rather than sent back to the app. None may be cached or framed by another site (a framed
/// Approve button could be clicked by a trick).
enum OAuthPages {
    static func signIn(client: OAuthClient, returnTo: String, problem: String? = nil) -> Response {
        var html = start("Sign in · ByteClub")
        html += "<p><b>\(Page.escape(client.name))</b> wants to sign in to this club. Sign in first with your access token "
        html += "(printed by <code>byteclub-server accounts add</code> or <code>accounts token</code>).</p>"
        if let problem { html += "<p class=error id=error>\(Page.escape(problem))</p>" }
        html += "<form method=post action=/oauth2/signin>"
        html += "<input type=hidden name=return_to value=\"\(Page.escape(returnTo))\">"
        html += "<label>Access token <input type=password id=access_token name=access_token size=40 autocomplete=off autofocus></label> "
        html += "<button id=signin>Sign in</button></form>"
        return page(html, status: problem == nil ? .ok : .unauthorized)
    }

    static func consent(client: OAuthClient, account: String, redirectURI: String, csrfToken: String) -> Response {
        var html = start("Approve \(client.name) · ByteClub")
        html += "<section class=consent><h2>Let <b id=client>\(Page.escape(client.name))</b> sign in as <b id=member>\(Page.escape(account))</b>?</h2>"
        html += "<p>It will read and write the club's notes and photos as you, until its token is revoked "
        html += "(<code>byteclub-server accounts revoke \(Page.escape(account))</code>).</p>"
        html += "<p class=meta>Client <code>\(Page.escape(client.id))</code>, going back to <code>\(Page.escape(redirectURI))</code></p>"
        html += "<form method=post action=/oauth2/authorize><input type=hidden name=csrf_token value=\"\(Page.escape(csrfToken))\">"
        html += "<button id=approve name=decision value=approve>Approve</button> "
        html += "<button id=deny name=decision value=deny>Deny</button></form></section>"
        return page(html, status: .ok)
    }

    /// An error that stops the sign-in here: the app is not told (its redirect URI is not
    /// trusted, or the form was not this member's).
    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        var html = start("Cannot sign in · ByteClub")
        html += "<p class=error id=error>\(Page.escape(message))</p>"
        return page(html, status: status)
    }

    private static func start(_ title: String) -> String {
        Page.head(title: title).replacingOccurrences(
            of: "</style>", with: ".error{color:#a00;font-weight:600} .consent button{font-size:1.1em;padding:.4em 1.4em}</style>")
            + "<header><h1>ByteClub</h1></header>"
    }

    private static func page(_ html: String, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
            HTTPField.Name("X-Frame-Options")!: "DENY", .contentSecurityPolicy: "frame-ancestors 'none'",
        ], body: .init(byteBuffer: ByteBuffer(string: html + "</body></html>")))
    }
}
