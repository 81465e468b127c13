import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The `/` page: the signed-in user's notes, a grid of photo thumbnails, uploaded images and
/// the request bins. Signing in is giving the access token once (`/?access_token=…` or the
/// form); it is then kept in an HTTP-only cookie.
struct PageRoutes: Sendable {
    let state: ServerState
    static let cookie = "byteclub_token"

    func add(to router: Routes) {
        router.get("/") { request, context in try await index(request, context) }
        router.get("/signout") { _, _ in
            Response(status: .seeOther, headers: [.location: "/", .setCookie: "\(Self.cookie)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"])
        }
    }

    /// The cookie that keeps a member signed in to the pages (`/` and `/oauth2/authorize`).
    static func signInCookie(_ token: String) -> String {
        "\(cookie)=\(token); Path=/; HttpOnly; SameSite=Strict"
    }

    func index(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        if let token = request.uri.queryParameters["access_token"] {
            return Response(status: .seeOther, headers: [.location: "/", .setCookie: Self.signInCookie(String(token))])
        }
        let account = try? await state.filesAccount(request)
        var html = Page.head(title: "ByteClub")
        html += "<header><h1>ByteClub</h1>"
        guard let account, let accountID = account.id else {
            html += "</header><form method=get action=/><p>Sign in with your access token (printed when the server first started):</p>"
            html += "<input name=access_token size=40 autocomplete=off> <button>Sign in</button></form></body></html>"
            return Page.html(html)
        }
        html += "<p>Signed in as <b>\(Page.escape(account.name))</b> · <a href=/signout>sign out</a></p></header>"
        let files = try await state.store.files(account.namespaceId, limit: 500)
        let (notes, photos) = (files.filter { !Metadata.thumbnailable($0.pathDisplay) }, files.filter { Metadata.thumbnailable($0.pathDisplay) })
        let images = try await state.store.images(account: accountID, limit: 100)
        let bins = try await state.store.binSummaries(limit: 50)
        html += "<h2>Notes</h2>"
        if notes.isEmpty { html += "<p class=empty>No notes yet.</p>" }
        for note in notes.prefix(50) {
            var preview = ""
            if note.bytes <= 64 << 10, let blob = note.blob, let data = FileManager.default.contents(atPath: state.blobs.path(of: blob)) {
                preview = String(decoding: data.prefix(400), as: UTF8.self)
            }
            html += "<article class=note><h3>\(Page.escape(note.pathDisplay))</h3><p class=meta>\(Metadata.humanSize(note.bytes)) · \(Metadata.rfc2822(note.modified))</p>"
            html += "<pre>\(Page.escape(preview))</pre></article>"
        }
        html += "<h2>Photos</h2><div class=grid>"
        if photos.isEmpty && images.isEmpty { html += "<p class=empty>No photos yet.</p>" }
        for photo in photos.prefix(100) {
            let encoded = photo.pathDisplay.split(separator: "/").map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "" }.joined(separator: "/")
            html += "<figure><img src=\"/1/thumbnails/dropbox/\(encoded)?size=m\" alt=\"\(Page.escape(photo.pathDisplay))\"><figcaption>\(Page.escape(photo.pathDisplay))</figcaption></figure>"
        }
        for image in images {
            let ext = ImagesRoutes.extensions[image.mimeType] ?? "jpg"
            html += "<figure><a href=\"/i/\(image.id).\(ext)\"><img src=\"/i/\(image.id)m.jpg\" alt=\"\(Page.escape(image.title ?? image.id))\"></a>"
            html += "<figcaption>\(Page.escape(image.title ?? image.id)) · \(image.width)×\(image.height)</figcaption></figure>"
        }
        html += "</div><h2>Request bins</h2>"
        if bins.isEmpty { html += "<p class=empty>No bins. <code>curl -X POST \(Page.escape(state.baseURL))/bins</code></p>" }
        html += "<ul class=bins>"
        for bin in bins {
            let (id, count) = (bin.id, bin.count)
            html += "<li><a href=\"/bins/\(Page.escape(id))?inspect\">\(Page.escape(id))</a> · \(count) request(s)</li>"
        }
        html += "</ul></body></html>"
        return Page.html(html)
    }
}

/// HTML helpers shared by the pages.
enum Page {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    static func head(title: String) -> String {
        """
        <!doctype html><html lang=en><head><meta charset=utf-8><title>\(escape(title))</title>
        <meta name=viewport content="width=device-width, initial-scale=1">
        <style>
        body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#222}
        header{display:flex;justify-content:space-between;align-items:baseline;border-bottom:1px solid #ddd}
        h1{margin:.2em 0} h2{margin-top:1.6em} .meta{color:#777;font-size:.85em;margin:0}
        .note{border:1px solid #e3e3e3;border-radius:6px;padding:.5em 1em;margin:.6em 0}
        .note h3{margin:.2em 0} pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;border-radius:4px}
        .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:12px}
        figure{margin:0;border:1px solid #e3e3e3;border-radius:6px;padding:6px;text-align:center}
        figure img{max-width:100%;height:128px;object-fit:contain} figcaption{font-size:.8em;color:#555;word-break:break-all}
        .req{border:1px solid #e3e3e3;border-radius:6px;padding:.5em 1em;margin:.8em 0}
        .method{background:#246;color:#fff;padding:0 .4em;border-radius:3px;font-size:.8em}
        table{border-collapse:collapse;font-size:.85em} th{text-align:left;padding-right:1em;color:#555} .empty{color:#888}
        </style></head><body>
        """
    }

    static func html(_ text: String) -> Response {
        Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
