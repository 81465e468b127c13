@testable import Ferry
import FerryTestSupport
import Foundation
import Testing

/// Cookies as URLSession keeps them: `Set-Cookie` read by RFC 6265's rules, a storage per
/// configuration kind, sent back with every request (redirects included), against a real
/// server on loopback; the shared storage's file on disk.
@Suite("Cookies")
struct CookieTests {
    let page = URL(string: "https://shop.example.com/cart/items?id=1")!

    @Test("Set-Cookie's attributes: path, domain, Max-Age over Expires, Secure, HttpOnly, SameSite; the default path")
    func attributes() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let plain = try #require(SetCookie.parse("id=42", from: page, now: now))
        #expect(plain.domain == "shop.example.com" && plain.path == "/cart" && plain.isSessionOnly && !plain.isSecure)
        let full = try #require(SetCookie.parse(
            "token=\"x y\"; Path=/; Domain=.Example.com; Max-Age=60; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Secure; HttpOnly; SameSite=Strict",
            from: page, now: now))
        #expect(full.value == "x y" && full.path == "/" && full.domain == ".example.com")
        #expect(full.expiresDate == now.addingTimeInterval(60), "Max-Age wins over Expires")
        #expect(full.isSecure && full.isHTTPOnly && full.sameSitePolicy == .sameSiteStrict)
        let dated = try #require(SetCookie.parse("a=1; expires=Sunday, 06-Nov-94 08:49:37 GMT", from: page, now: now))
        #expect(dated.expiresDate == Date(timeIntervalSince1970: 784_111_777))
        #expect(CookieDate.parse("Sun Nov  6 08:49:37 1994") == Date(timeIntervalSince1970: 784_111_777))
        #expect(CookieDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(CookieDate.parse("not a date") == nil)
    }

    @Test("what is refused: no name, a foreign or top-level domain, more than 4 KiB, a subdomain of an IP address")
    func refused() {
        #expect(SetCookie.parse("novalue", from: page) == nil)
        #expect(SetCookie.parse("=value", from: page) == nil)
        #expect(SetCookie.parse("a=1; Domain=other.com", from: page) == nil)
        #expect(SetCookie.parse("a=1; Domain=com", from: page) == nil)
        #expect(SetCookie.parse("a=\(String(repeating: "x", count: 5000))", from: page) == nil)
        #expect(SetCookie.parse("a=1; Domain=0.0.1", from: URL(string: "http://127.0.0.1/")!) == nil)
        #expect(SetCookie.parse("a=1; Domain=127.0.0.1", from: URL(string: "http://127.0.0.1/")!)?.domain == "127.0.0.1")
    }

    @Test("which requests a cookie goes with: host-only or domain, path prefix at a slash, Secure over HTTPS, not expired")
    func matching() throws {
        let now = Date()
        let hostOnly = try #require(SetCookie.parse("a=1; Path=/cart", from: page))
        #expect(hostOnly.matches(URL(string: "https://shop.example.com/cart")!, at: now))
        #expect(hostOnly.matches(URL(string: "https://shop.example.com/cart/x")!, at: now))
        #expect(!hostOnly.matches(URL(string: "https://shop.example.com/cartel")!, at: now))
        #expect(!hostOnly.matches(URL(string: "https://www.shop.example.com/cart")!, at: now))
        let domain = try #require(SetCookie.parse("b=2; Domain=example.com; Path=/; Secure", from: page))
        #expect(domain.matches(URL(string: "https://www.example.com/")!, at: now))
        #expect(!domain.matches(URL(string: "http://www.example.com/")!, at: now), "Secure: HTTPS only")
        #expect(!domain.matches(URL(string: "https://notexample.com/")!, at: now))
        let gone = try #require(SetCookie.parse("c=3; Max-Age=0", from: page))
        #expect(!gone.matches(page, at: now))
    }

    @Test("the platform's class methods: several cookies in one joined value (dates with commas), request header fields, properties")
    func classMethods() throws {
        let joined = "a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Path=/, b=2; Path=/, c=3"
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": joined, "Content-Type": "text/plain"], for: page)
        #expect(cookies.map(\.name) == ["a", "b", "c"])
        #expect(cookies.first?.expiresDate == CookieDate.parse("21 Oct 2099 07:28:00"))
        #expect(HTTPCookie.requestHeaderFields(with: Array(cookies.prefix(2))) == ["Cookie": "a=1; b=2"])
        #expect(HTTPCookie.requestHeaderFields(with: []).isEmpty)
        let made = try #require(HTTPCookie(properties: [.name: "n", .value: "v", .path: "/", .originURL: page, .secure: "TRUE", .maximumAge: "30"]))
        #expect(made.domain == "shop.example.com" && made.isSecure && !made.isSessionOnly)
        let properties = try #require(made.properties)
        let again = try #require(HTTPCookie(properties: properties))
        #expect(again == made)
        #expect(HTTPCookie(properties: [.name: "n", .value: "v", .path: "/"]) == nil, "no domain and no origin")
    }

    @Test("a storage keeps one cookie per name, domain and path; an expired Set-Cookie deletes; longer paths are sent first; bounded per domain")
    func storage() throws {
        let storage = HTTPCookieStorage()
        let url = URL(string: "https://example.com/a/b")!
        storage.setCookies(HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "x=1; Path=/"], for: url), for: url, mainDocumentURL: nil)
        storage.setCookies(HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "y=2; Path=/a"], for: url), for: url, mainDocumentURL: nil)
        storage.setCookies(HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "x=3; Path=/"], for: url), for: url, mainDocumentURL: nil)
        #expect(storage.cookies(for: url)?.map { "\($0.name)=\($0.value)" } == ["y=2", "x=3"])
        storage.setCookies(HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "x=; Path=/; Max-Age=0"], for: url), for: url, mainDocumentURL: nil)
        #expect(storage.cookies(for: url)?.map(\.name) == ["y"])
        storage.setCookies(HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "z=1"], for: url), for: URL(string: "https://other.com/"), mainDocumentURL: nil)
        #expect(storage.cookies?.count == 1, "a cookie for another host is not taken")
        for i in 0..<70 { storage.setCookie(try #require(HTTPCookie(properties: [.name: "n\(i)", .value: "v", .path: "/", .domain: "many.com"]))) }
        #expect(storage.cookies(for: URL(string: "https://many.com/")!)?.count == HTTPCookieStorage.maximumPerDomain)
        storage.cookieAcceptPolicy = .never
        storage.setCookie(try #require(HTTPCookie(properties: [.name: "late", .value: "v", .path: "/", .domain: "example.com"])))
        #expect(storage.cookies(for: url)?.contains { $0.name == "late" } == false)
    }

    @Test("a storage on disk keeps the cookies with an expiry date in a 0600 file, and a new one on the same file reads them")
    func onDisk() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-cookies-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("cookies/app.json")
        let url = URL(string: "https://example.com/")!
        let first = HTTPCookieStorage(file: { file })
        first.setCookies(HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "kept=1; Max-Age=3600, session=2"], for: url), for: url, mainDocumentURL: nil)
        #expect(first.cookies?.count == 2)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let second = HTTPCookieStorage(file: { file })
        #expect(second.cookies?.map(\.name) == ["kept"], "session cookies are not written")
        try Data("not json".utf8).write(to: file)
        #expect(HTTPCookieStorage(file: { file }).cookies == nil, "a damaged file is read as empty, not a crash")
    }

    @Test("cookies changed from many threads at once: the file ends with the newest of them, written outside the cookies' lock")
    func concurrentChangesOnDisk() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-cookies-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("cookies/app.json")
        let url = URL(string: "https://example.com/")!
        let storage = HTTPCookieStorage(file: { file })
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<40 {  // under the 50 a domain may keep
                group.addTask {
                    storage.setCookies(HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "c\(i)=\(i); Max-Age=3600"], for: url), for: url, mainDocumentURL: nil)
                    _ = storage.cookies(for: url)
                }
            }
        }
        #expect(storage.cookies?.count == 40)
        #expect(HTTPCookieStorage(file: { file }).cookies?.count == 40, "a write of fewer cookies did not land after the last")
    }

    @Test("sessions send and store cookies: a redirect's Set-Cookie reaches the next hop; ephemeral sessions share nothing; the switches")
    func sessions() async throws {
        try await withServer { server in
            let setThenEcho = server.url("/set-cookie?c=id%3D7%3B%20Path%3D%2F&to=/headers")
            let session = URLSession(configuration: .ephemeral)
            let (data, _) = try await session.data(from: setThenEcho)
            #expect(try headers(data)["cookie"] == "id=7", "the cookie set by the redirect goes with the next hop")
            let (again, _) = try await session.data(from: server.url("/headers"))
            #expect(try headers(again)["cookie"] == "id=7")
            #expect(session.configuration.httpCookieStorage?.cookies?.map(\.name) == ["id"])

            let other = URLSession(configuration: .ephemeral)
            let (fresh, _) = try await other.data(from: server.url("/headers"))
            #expect(try headers(fresh)["cookie"] == nil, "another ephemeral session has its own cookies")

            var request = URLRequest(url: server.url("/headers"))
            request.httpShouldHandleCookies = false
            let (without, _) = try await session.data(for: request)
            #expect(try headers(without)["cookie"] == nil)
            request.setValue("mine=1", forHTTPHeaderField: "Cookie")
            request.httpShouldHandleCookies = true
            let (own, _) = try await session.data(for: request)
            #expect(try headers(own)["cookie"] == "mine=1", "a request's own Cookie header is sent as it is")

            let refusing = URLSessionConfiguration.ephemeral
            refusing.httpCookieAcceptPolicy = .never
            let strict = URLSession(configuration: refusing)
            _ = try await strict.data(from: server.url("/set-cookie?c=a%3D1"))
            #expect(strict.configuration.httpCookieStorage?.cookies == nil, "httpCookieAcceptPolicy .never stores nothing")
            let off = URLSessionConfiguration.ephemeral
            off.httpShouldSetCookies = false
            let none = URLSession(configuration: off)
            _ = try await none.data(from: server.url("/set-cookie?c=a%3D1"))
            #expect(none.configuration.httpCookieStorage?.cookies == nil)

            await withCheckedContinuation { done in session.reset { done.resume() } }
            #expect(session.configuration.httpCookieStorage?.cookies == nil, "reset empties the session's cookies")
            for session in [session, other, strict, none] { session.finishTasksAndInvalidate() }
        }
    }

    private func headers(_ data: Data) throws -> [String: String] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
    }
}
