import FerryApps
import FerryCore
import FerryEngine
public import Foundation
import Logging
import Synchronization

/// Where a session's cookies are kept, in URLSession's spelling. `.default` and background
/// sessions use ``shared`` (kept on disk for this app), `.ephemeral` ones a storage of their
/// own in memory; the engine sends the matching cookies with every request and stores what
/// every response sets (RFC 6265), redirects included.
///
/// ```swift
/// let storage = HTTPCookieStorage.shared
/// for cookie in storage.cookies(for: URL(string: "https://example.com/")!) ?? [] {
///     print(cookie.name, cookie.value, cookie.expiresDate ?? "session")
/// }
/// ```
///
/// ``shared`` lives in `<data dir>/cookies/<app>.json` (the app's bundle identifier from its
/// manifest, or `unregistered.<program>`), `0600`; only cookies with an expiry date are
/// written there, as on the platform. ``sharedCookieStorage(forGroupContainerIdentifier:)``
/// keeps a group's cookies in its shared container, for an app and its extensions. At most
/// 50 cookies a domain and 3,000 in all are kept (the oldest go first), each at most 4 KiB.
/// Two processes of one app that change cookies at once: the last to write wins on disk.
public final class HTTPCookieStorage: Sendable {
    static let maximumPerDomain = 50
    static let maximumCount = 3000

    private struct State {
        var cookies: [Key: HTTPCookie] = [:]
        var loaded = false
        var acceptPolicy = HTTPCookie.AcceptPolicy.always
        /// Counts the changes of the lasting cookies, so that the newest is the one written.
        var version = 0
    }
    /// A cookie's identity: a new one with the same replaces it.
    private struct Key: Hashable {
        var name: String
        var domain: String
        var path: String
        init(_ cookie: HTTPCookie) { (name, domain, path) = (cookie.name, cookie.domain, cookie.path) }
    }
    private let state = Mutex(State())
    /// The version of the cookies last written to the file; held while one is written.
    private let written = Mutex(0)
    /// Where the cookies are kept across launches; nil: in memory only.
    private let place: FoundOnce<URL?>

    /// A storage of its own, in memory (an `.ephemeral` session's). Ferry's: the platform makes
    /// these only for ephemeral sessions.
    public convenience init() { self.init(file: { nil }) }

    init(file: @escaping @Sendable () -> URL?) { self.place = FoundOnce(file) }

    /// This app's cookies, kept on disk. Its file is found the first time it is used.
    public static let shared = HTTPCookieStorage(file: {
        guard let paths = try? FerryPaths(environment: ProcessInfo.processInfo.environment) else { return nil }
        return paths.dataDirectory.appendingPathComponent("cookies", isDirectory: true).appendingPathComponent(ThisApp.fileName() + ".json")
    })

    private static let groups = Mutex<[String: HTTPCookieStorage]>([:])

    /// The cookies of an app group, kept in its shared container (`Library/Cookies/Cookies.json`)
    /// for the app and its extensions. In memory when this program is not in the group.
    public static func sharedCookieStorage(forGroupContainerIdentifier identifier: String) -> HTTPCookieStorage {
        groups.withLock { groups in
            if let storage = groups[identifier] { return storage }
            let storage = HTTPCookieStorage(file: {
                (try? SharedContainer.url(forSecurityApplicationGroupIdentifier: identifier))?
                    .appendingPathComponent("Library/Cookies/Cookies.json")
            })
            groups[identifier] = storage
            return storage
        }
    }

    /// Which cookies ``setCookie(_:)`` and ``setCookies(_:for:mainDocumentURL:)`` take
    /// (`.always` unless set). A session's own policy is its configuration's `httpCookieAcceptPolicy`.
    public var cookieAcceptPolicy: HTTPCookie.AcceptPolicy {
        get { state.withLock { $0.acceptPolicy } }
        set { state.withLock { $0.acceptPolicy = newValue } }
    }

    /// Every cookie kept (expired ones are not); nil when there are none.
    public var cookies: [HTTPCookie]? {
        let now = Date()
        let all = withLoaded { $0.cookies.values.filter { !Self.isExpired($0, at: now) } }
        return all.isEmpty ? nil : all.sorted(by: Self.sendingOrder)
    }

    /// The cookies a request to `url` would send, in the order it sends them; nil for none.
    public func cookies(for url: URL) -> [HTTPCookie]? {
        let now = Date()
        let matching = withLoaded { $0.cookies.values.filter { $0.matches(url, at: now) } }
        return matching.isEmpty ? nil : matching.sorted(by: Self.sendingOrder)
    }

    /// Keeps `cookie`, replacing one of the same name, domain and path; an expired one
    /// removes that one instead.
    public func setCookie(_ cookie: HTTPCookie) {
        guard cookieAcceptPolicy != .never else { return }
        store([cookie])
    }

    /// Keeps `cookies` (as ``setCookie(_:)``), each only if it may be set for `url`'s host.
    public func setCookies(_ cookies: [HTTPCookie], for url: URL?, mainDocumentURL: URL?) {
        guard cookieAcceptPolicy != .never else { return }
        let host = url?.host?.lowercased()
        store(cookies.filter { cookie in host.map(cookie.domainMatches) ?? true })
    }

    public func deleteCookie(_ cookie: HTTPCookie) {
        change { $0.cookies[Key(cookie)] = nil }
    }

    /// Removes the cookies made at or after `date`.
    public func removeCookies(since date: Date) {
        change { state in state.cookies = state.cookies.filter { $0.value.created < date } }
    }

    /// Keeps `cookies` as set by a response to `task`'s current request.
    public func storeCookies(_ cookies: [HTTPCookie], for task: URLSessionTask) {
        setCookies(cookies, for: task.currentRequest?.url ?? task.originalRequest?.url, mainDocumentURL: nil)
    }

    /// The cookies `task`'s current request sends.
    public func getCookiesFor(_ task: URLSessionTask, completionHandler: @escaping @Sendable ([HTTPCookie]?) -> Void) {
        completionHandler((task.currentRequest?.url ?? task.originalRequest?.url).flatMap { cookies(for: $0) })
    }

    // MARK: For the engine

    /// The jar a session's transfers use: this storage, taking responses' cookies as
    /// `acceptPolicy` says.
    func jar(acceptPolicy: HTTPCookie.AcceptPolicy) -> any CookieJar {
        SessionCookies(storage: self, acceptPolicy: acceptPolicy)
    }

    private struct SessionCookies: CookieJar {
        let storage: HTTPCookieStorage
        let acceptPolicy: HTTPCookie.AcceptPolicy

        func cookieHeader(for url: URL) -> String? {
            storage.cookies(for: url).flatMap { HTTPCookie.requestHeaderFields(with: $0)["Cookie"] }
        }

        func storeCookies(from headers: HeaderFields, for url: URL) {
            guard acceptPolicy != .never else { return }
            let cookies = headers.values(for: "Set-Cookie").compactMap { SetCookie.parse($0, from: url) }
            if !cookies.isEmpty { storage.store(cookies) }
        }
    }

    // MARK: Keeping

    private func store(_ cookies: [HTTPCookie]) {
        let now = Date()
        change { state in
            for cookie in cookies {
                let key = Key(cookie)
                if Self.isExpired(cookie, at: now) {
                    state.cookies[key] = nil
                } else {
                    // A replaced cookie keeps its creation time (RFC 6265 §5.3, step 11).
                    let created = state.cookies[key]?.created ?? cookie.created
                    state.cookies[key] = HTTPCookie(
                        name: cookie.name, value: cookie.value, domain: cookie.domain, path: cookie.path,
                        expiresDate: cookie.expiresDate, isSecure: cookie.isSecure, isHTTPOnly: cookie.isHTTPOnly,
                        sameSitePolicy: cookie.sameSitePolicy, created: created)
                }
            }
            Self.evict(&state.cookies, now: now)
        }
    }

    /// Expired cookies first, then the oldest: per domain past 50, then overall past 3,000.
    private static func evict(_ cookies: inout [Key: HTTPCookie], now: Date) {
        cookies = cookies.filter { !isExpired($0.value, at: now) }
        for group in Dictionary(grouping: cookies.values, by: \.domain).values where group.count > maximumPerDomain {
            for cookie in group.sorted(by: { $0.created < $1.created }).prefix(group.count - maximumPerDomain) {
                cookies[Key(cookie)] = nil
            }
        }
        if cookies.count > maximumCount {
            for cookie in cookies.values.sorted(by: { $0.created < $1.created }).prefix(cookies.count - maximumCount) {
                cookies[Key(cookie)] = nil
            }
        }
    }

    private static func isExpired(_ cookie: HTTPCookie, at now: Date) -> Bool {
        cookie.expiresDate.map { $0 <= now } ?? false
    }

    /// Longer paths first, then older cookies (RFC 6265 §5.4, step 2).
    private static func sendingOrder(_ a: HTTPCookie, _ b: HTTPCookie) -> Bool {
        a.path.count != b.path.count ? a.path.count > b.path.count : a.created < b.created
    }

    private func withLoaded<T>(_ body: (inout State) -> T) -> T {
        state.withLock { state in
            loadIfNeeded(&state)
            return body(&state)
        }
    }

    /// Changes the cookies and writes the lasting ones back to the file. The file is written
    /// outside the cookies' lock: a request reading its `Cookie` header (on a connection's event
    /// loop, for a transfer carried there) never waits for the disk. Writes go one at a time,
    /// and one older than what the file already holds is skipped.
    private func change(_ body: (inout State) -> Void) {
        let changed = state.withLock { state -> (version: Int, cookies: [Key: HTTPCookie])? in
            loadIfNeeded(&state)
            let before = Self.lasting(state.cookies)
            body(&state)
            // The file holds the cookies with an expiry date: only their change is written.
            let after = Self.lasting(state.cookies)
            guard after != before else { return nil }
            state.version += 1
            return (state.version, after)
        }
        guard let changed else { return }
        written.withLock { written in
            guard changed.version > written else { return }
            save(changed.cookies)
            written = changed.version
        }
    }

    private static func lasting(_ cookies: [Key: HTTPCookie]) -> [Key: HTTPCookie] {
        cookies.filter { !$0.value.isSessionOnly }
    }

    private func loadIfNeeded(_ state: inout State) {
        guard !state.loaded else { return }
        state.loaded = true
        guard let file = place.value, let data = try? Data(contentsOf: file) else { return }
        do {
            let now = Date()
            for saved in try JSONDecoder().decode([SavedCookie].self, from: data) {
                let cookie = saved.cookie
                if !Self.isExpired(cookie, at: now) { state.cookies[Key(cookie)] = cookie }
            }
        } catch {
            Logger(label: "ferry.cookies").warning(
                "the cookie file cannot be read; starting without its cookies", metadata: ["file": "\(file.path)", "error": "\(error)"])
        }
    }

    private func save(_ cookies: [Key: HTTPCookie]) {
        guard let file = place.value else { return }
        let lasting = cookies.values.filter { !$0.isSessionOnly }.sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }
        do {
            let folder = file.deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            // Not synced: cookies are worth no disk flush on every response.
            try PrivateFile.replace(file, with: try encoder.encode(lasting.map(SavedCookie.init)), sync: false)
        } catch {
            Logger(label: "ferry.cookies").warning(
                "cannot write the cookie file; cookies are kept in memory", metadata: ["file": "\(file.path)", "error": "\(error)"])
        }
    }
}

/// A cookie as the storage's file keeps it.
private struct SavedCookie: Codable {
    var name: String
    var value: String
    var domain: String
    var path: String
    var expires: Date?
    var secure: Bool
    var httpOnly: Bool
    var sameSite: String?
    var created: Date

    init(_ cookie: HTTPCookie) {
        (name, value, domain, path) = (cookie.name, cookie.value, cookie.domain, cookie.path)
        (expires, secure, httpOnly, sameSite, created) = (cookie.expiresDate, cookie.isSecure, cookie.isHTTPOnly, cookie.sameSitePolicy?.rawValue, cookie.created)
    }

    var cookie: HTTPCookie {
        HTTPCookie(
            name: name, value: value, domain: domain, path: path, expiresDate: expires, isSecure: secure, isHTTPOnly: httpOnly,
            sameSitePolicy: sameSite.map(HTTPCookieStringPolicy.init(rawValue:)), created: created)
    }
}
