import FerryCore
public import Foundation

/// Where a transfer's responses may be kept and served from (Ferry's `URLCache` is one). The
/// engine decides what may be stored and when an entry may be used (RFC 9111, ``HTTPCache``);
/// the cache only keeps entries, matched by URL and by the request headers the response
/// `Vary`s on.
public protocol ResponseCache: Sendable {
    func entry(for request: Request) -> CachedResponse?
    func store(_ entry: CachedResponse, for request: Request)
    func removeEntry(for request: Request)
}

/// A response kept whole, with when it was asked for and when it arrived (for its age).
public struct CachedResponse: Sendable {
    public var response: Response
    public var body: Data
    public var requestDate: Date
    public var responseDate: Date

    public init(response: Response, body: Data, requestDate: Date, responseDate: Date) {
        self.response = response
        self.body = body
        self.requestDate = requestDate
        self.responseDate = responseDate
    }
}

/// How a request may use the cache: URLRequest's `cachePolicy`.
public enum CacheUse: Sendable, Hashable {
    /// HTTP's rules: a fresh entry is used, a stale one revalidated.
    case useProtocolCachePolicy
    /// Loaded from the network (and stored when it may be).
    case reloadIgnoringLocalCacheData
    case reloadIgnoringLocalAndRemoteCacheData
    /// An entry is used however old; else loaded.
    case returnCacheDataElseLoad
    /// An entry is used however old; else the task fails (`resourceUnavailable`).
    case returnCacheDataDontLoad
    /// An entry is revalidated with the server before it is used.
    case reloadRevalidatingCacheData
}

/// RFC 9111 for a private cache: what may be stored, how long it is fresh, what a request
/// does with an entry.
public enum HTTPCache {
    /// What the engine does for a request, given its entry.
    enum Decision {
        case serve(CachedResponse)
        case revalidate(CachedResponse, conditions: [(String, String)])
        case load
        case unavailable
    }

    static func decide(_ entry: CachedResponse?, use: CacheUse, request: Request, now: Date) -> Decision {
        let requestDirectives = Directives(request.headers.values(for: "Cache-Control"))
        guard let entry else { return use == .returnCacheDataDontLoad ? .unavailable : .load }
        switch use {
        case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData:
            return .load
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            return .serve(entry)
        case .reloadRevalidatingCacheData:
            return revalidation(entry)
        case .useProtocolCachePolicy:
            let responseDirectives = Directives(entry.response.headers.values(for: "Cache-Control"))
            let mustAsk = responseDirectives.has("no-cache") || requestDirectives.has("no-cache")
                || requestDirectives.seconds("max-age") == 0 || request.headers["Pragma"]?.lowercased() == "no-cache"
            if !mustAsk, let lifetime = freshnessLifetime(entry.response), age(of: entry, now: now) < lifetime {
                return .serve(entry)
            }
            return revalidation(entry)
        }
    }

    private static func revalidation(_ entry: CachedResponse) -> Decision {
        var conditions: [(String, String)] = []
        if let etag = entry.response.headers["ETag"] { conditions.append(("If-None-Match", etag)) }
        if let modified = entry.response.headers["Last-Modified"] { conditions.append(("If-Modified-Since", modified)) }
        return conditions.isEmpty ? .load : .revalidate(entry, conditions: conditions)
    }

    /// Whether `response` to `request` may be kept: a GET answered with a status that is
    /// cacheable by default, nothing saying `no-store`, no `Vary: *`, and something to judge
    /// it by later (a freshness lifetime or a validator).
    public static func isStorable(_ response: Response, for request: Request) -> Bool {
        guard request.method == "GET", [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501].contains(response.statusCode) else { return false }
        let directives = Directives(response.headers.values(for: "Cache-Control"))
        if directives.has("no-store") || Directives(request.headers.values(for: "Cache-Control")).has("no-store") { return false }
        if response.headers.values(for: "Vary").contains(where: { $0.contains("*") }) { return false }
        return freshnessLifetime(response) != nil || response.headers["ETag"] != nil || response.headers["Last-Modified"] != nil
    }

    /// How long the response stays fresh: `max-age`, else `Expires` − `Date`, else a tenth of
    /// the time since `Last-Modified` (the heuristic of §4.2.2); nil when nothing says.
    static func freshnessLifetime(_ response: Response) -> TimeInterval? {
        let directives = Directives(response.headers.values(for: "Cache-Control"))
        if let maxAge = directives.seconds("max-age") { return maxAge }
        let date = response.headers["Date"].flatMap(HTTPDate.parse)
        if let expires = response.headers["Expires"] {
            guard let expiry = HTTPDate.parse(expires) else { return 0 }  // an invalid Expires means already expired
            return expiry.timeIntervalSince(date ?? expiry)
        }
        if let modified = response.headers["Last-Modified"].flatMap(HTTPDate.parse), let date {
            return max(0, date.timeIntervalSince(modified) / 10)
        }
        return nil
    }

    /// The entry's current age (§4.2.3): the server's `Age` and the clock skew, plus the time
    /// since it arrived.
    static func age(of entry: CachedResponse, now: Date) -> TimeInterval {
        let date = entry.response.headers["Date"].flatMap(HTTPDate.parse) ?? entry.responseDate
        let ageHeader = entry.response.headers["Age"].flatMap(TimeInterval.init) ?? 0
        let apparent = max(0, entry.responseDate.timeIntervalSince(date))
        let corrected = ageHeader + entry.responseDate.timeIntervalSince(entry.requestDate)
        return max(apparent, corrected) + now.timeIntervalSince(entry.responseDate)
    }

    /// The stored response refreshed by a `304`: its headers replace the stored ones of the
    /// same name (§3.2), and its protocol is the one that answered.
    static func refreshed(_ entry: CachedResponse, with notModified: Response, requestDate: Date, now: Date) -> CachedResponse {
        var headers = entry.response.headers
        for field in notModified.headers where !["content-length", "content-encoding", "transfer-encoding"].contains(field.name.lowercased()) {
            headers[field.name] = notModified.headers.values(for: field.name).joined(separator: ", ")
        }
        var response = entry.response
        response.headers = headers
        response.httpVersion = notModified.httpVersion  // the connection that answered
        return CachedResponse(response: response, body: entry.body, requestDate: requestDate, responseDate: now)
    }

    /// `Cache-Control` directives, names lower-cased.
    struct Directives {
        var values: [String: String?] = [:]
        init(_ fields: [String]) {
            for part in fields.joined(separator: ",").split(separator: ",") {
                let pair = part.split(separator: "=", maxSplits: 1)
                guard let name = pair.first?.trimmingCharacters(in: .whitespaces).lowercased(), !name.isEmpty else { continue }
                values[name] = pair.count > 1 ? pair[1].trimmingCharacters(in: CharacterSet(charactersIn: " \"")) : nil
            }
        }
        func has(_ name: String) -> Bool { values.keys.contains(name) }
        func seconds(_ name: String) -> TimeInterval? { values[name].flatMap { $0 }.flatMap { Int($0) }.map { TimeInterval(max(0, $0)) } }
    }
}
