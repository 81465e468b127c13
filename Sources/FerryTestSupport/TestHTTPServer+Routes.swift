// The routes of TestHTTPServer. Query parameters combine.
//
// | route | answer |
// |---|---|
// | `GET/HEAD /bytes/<n>?seed=S` | n bytes of `TestContent` (see `TestHTTPServer+Bytes.swift` for options) |
// | `GET /status/<code>?retryAfter=S` | that status, small body, optional `Retry-After` |
// | `GET /flaky/<key>?failures=K&status=503&retryAfter=S&then=/bytes/100` | K failures (`status=close`: closed without a response), then `then` |
// | `GET /redirect/<n>?to=/bytes/10` | 302 chain of n hops ending at `to` (relative Locations) |
// | `GET /redirect-loop` | 302 to itself forever |
// | `GET /redirect-absolute?to=URL` | 302 to an absolute URL |
//
// Redirects take `code=301|303|307|308` instead of 302 (any method is redirected the same).
// Parameters whose value is itself a target (`to`, `then`) must percent-encode `?`/`&`
// (`then=/bytes/100%3Fseed%3D4`); `retryAfter` is passed verbatim, so an HTTP-date works too.
// | `GET /delay/<ms>` | waits, then 200 `ok` |
// | `GET /gate/<name>?count=N` | waits until N requests wait at the gate, then all get 200 `ok` at once |
// | `GET /slow-headers/<ms>` | waits before sending any header, then 200 `ok` |
// | `PUT/POST /upload…?dropAfter=N&dropOnce=KEY&status=CODE` | reads the body streaming; 200 JSON |
//
// `/upload`: answers `{"bytes":N,"sha256":"hex","method":"PUT","contentType":"…"}`; with
// `dropAfter=N` the connection is closed after N body bytes, on every request, or only on
// the first request naming `dropOnce=KEY`. `Expect: 100-continue` is answered with 100.
// | `GET /headers` | JSON object of the request headers, names lower-cased |
// | `GET /basic-auth/…`, `GET /digest-auth/…` | HTTP authentication (TestHTTPServer+Auth.swift) |
// | `GET /cache/<name>?maxAge=S&etag=E&noStore=1&vary=H` | `<name> <n>` (n: full answers so far) with those caching headers; `If-None-Match: E` gets 304 |
// | `GET /set-cookie?c=V&c2=V&c3=V&to=/headers` | a `Set-Cookie: V` field for each `c…` (percent-encoded); 302 to `to` when given, else 200 |
// | `GET /close-immediately` | closes with no response |
// | `GET /garbage` | writes non-HTTP bytes, then closes |
import NIOCore
import NIOHTTP1

extension TestHTTPServer {
    func route(_ ex: Exchange, _ out: Responder, depth: Int) async throws -> Outcome {
        let parts = ex.target.components
        let method = ex.head.method
        switch parts.first ?? "" {
        case "bytes" where method == .GET || method == .HEAD:
            guard parts.count == 2, let n = Int(parts[1]), n >= 0 else { return try await notFound(out) }
            return try await serveBytes(count: n, ex, out)
        case "status":
            guard parts.count == 2, let code = Int(parts[1]), (200...599).contains(code) else {
                return try await notFound(out)
            }
            var extra: [(String, String)] = []
            if let s = ex.target.query["retryAfter"] { extra.append(("retry-after", s)) }
            try await out.simple(.init(statusCode: code), "status \(code)\n", extra)
            return .keepAlive
        case "flaky":
            guard parts.count == 2 else { return try await notFound(out) }
            let failures = ex.target.int("failures") ?? 1
            let seen = state.withLock { s -> Int in
                s.flaky[parts[1], default: 0] += 1
                return s.flaky[parts[1]]!
            }
            if seen <= failures {
                // `status=close`: the connection closes with no response, as a stale keep-alive one does.
                if ex.target.query["status"] == "close" { return .close }
                let code = ex.target.int("status") ?? 503
                var extra: [(String, String)] = []
                if let s = ex.target.query["retryAfter"] { extra.append(("retry-after", s)) }
                try await out.simple(.init(statusCode: code), "failure \(seen) of \(failures)\n", extra)
                return .keepAlive
            }
            var next = ex
            next.target = Target(uri: ex.target.query["then"] ?? "/bytes/100")
            guard depth < 4 else { return try await notFound(out) }
            return try await route(next, out, depth: depth + 1)
        case "redirect":
            guard parts.count == 2, let n = Int(parts[1]), n >= 0 else { return try await notFound(out) }
            let to = ex.target.query["to"] ?? "/bytes/10"
            var location = n <= 1 ? to : "/redirect/\(n - 1)?to=\(Target.encode(to))"
            if n > 1, let code = ex.target.query["code"] { location += "&code=" + code }
            try await out.simple(redirectStatus(ex), "redirect\n", [("location", location)])
            return .keepAlive
        case "redirect-loop":
            try await out.simple(redirectStatus(ex), "loop\n", [("location", ex.head.uri)])
            return .keepAlive
        case "redirect-absolute":
            let to = ex.target.query["to"] ?? baseURL + "/bytes/10"
            try await out.simple(redirectStatus(ex), "redirect\n", [("location", to)])
            return .keepAlive
        case "gate":
            // Many transfers that end at one moment. A gate short of its count holds its
            // requests until their clients time out.
            guard parts.count == 2, let count = ex.target.int("count"), count >= 1 else { return try await notFound(out) }
            await withCheckedContinuation { (arrived: CheckedContinuation<Void, Never>) in
                let open = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                    s.gates[parts[1], default: []].append(arrived)
                    guard s.gates[parts[1]]!.count >= count else { return [] }
                    defer { s.gates[parts[1]] = nil }
                    return s.gates[parts[1]]!
                }
                for waiter in open { waiter.resume() }
            }
            try await out.simple(.ok, "ok")
            return .keepAlive
        case "delay", "slow-headers":
            guard parts.count == 2, let ms = Int(parts[1]), ms >= 0 else { return try await notFound(out) }
            try await Task.sleep(for: .milliseconds(ms))
            try await out.simple(.ok, "ok")
            return .keepAlive
        case let first where first.hasPrefix("upload") && (method == .PUT || method == .POST):
            let code = ex.target.int("status") ?? 200
            let contentType = ex.head.headers.first(name: "content-type") ?? ""
            let json =
                "{\"bytes\":\(ex.bodyLength),\"sha256\":\"\(ex.bodySHA256)\",\"method\":\(jsonString(method.rawValue)),"
                + "\"contentType\":\(jsonString(contentType))}"
            try await out.simple(.init(statusCode: code), json, contentType: "application/json")
            return .keepAlive
        case "headers":
            var merged: [(String, String)] = []
            for (name, value) in ex.head.headers.map({ ($0.name.lowercased(), $0.value) }) {
                if let i = merged.firstIndex(where: { $0.0 == name }) {
                    merged[i].1 += ", " + value
                } else {
                    merged.append((name, value))
                }
            }
            let json = "{" + merged.map { jsonString($0.0) + ":" + jsonString($0.1) }.joined(separator: ",") + "}"
            try await out.simple(.ok, json, contentType: "application/json")
            return .keepAlive
        case "basic-auth" where parts.count == 3:
            return try await basicAuth(ex, out, user: parts[1], password: parts[2])
        case "digest-auth" where parts.count == 4:
            return try await digestAuth(ex, out, qop: parts[1], user: parts[2], password: parts[3])
        case "cache" where parts.count == 2:
            let name = parts[1]
            var fields: [(String, String)] = []
            var control: [String] = []
            if let age = ex.target.query["maxAge"] { control.append("max-age=\(age)") }
            if ex.target.query["noStore"] != nil { control.append("no-store") }
            if !control.isEmpty { fields.append(("cache-control", control.joined(separator: ", "))) }
            if let vary = ex.target.query["vary"] { fields.append(("vary", vary)) }
            if let etag = ex.target.query["etag"] {
                fields.append(("etag", "\"\(etag)\""))
                if ex.head.headers.first(name: "if-none-match") == "\"\(etag)\"" {
                    state.withLock { $0.cacheNotModified[name, default: 0] += 1 }
                    try await out.simple(.notModified, "", fields)
                    return .keepAlive
                }
            }
            let count = state.withLock { state -> Int in
                state.cacheAnswers[name, default: 0] += 1
                return state.cacheAnswers[name]!
            }
            try await out.simple(.ok, "\(name) \(count)", fields)
            return .keepAlive
        case "set-cookie":
            let fields = ex.target.query.filter { $0.key.hasPrefix("c") }.sorted { $0.key < $1.key }.map { ("set-cookie", $0.value) }
            if let to = ex.target.query["to"] {
                try await out.simple(.found, "redirect\n", fields + [("location", to)])
            } else {
                try await out.simple(.ok, "cookies set\n", fields)
            }
            return .keepAlive
        case "close-immediately":
            return .close
        case "garbage":
            try await out.raw(Array("SPLAT \u{0}\u{1}\u{2} this is not HTTP at all\r\n\r\n\u{7f}\u{3}".utf8))
            return .close
        default:
            return try await notFound(out)
        }
    }

    /// 302 unless `code=301|303|307|308` asks for another redirect status.
    private func redirectStatus(_ ex: Exchange) -> HTTPResponseStatus {
        let code = ex.target.int("code") ?? 302
        return [301, 302, 303, 307, 308].contains(code) ? .init(statusCode: code) : .found
    }

    private func notFound(_ out: Responder) async throws -> Outcome {
        try await out.simple(.notFound, "not found\n")
        return .keepAlive
    }
}
