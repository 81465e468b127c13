// GET|HEAD /bytes/<n>: deterministic content with validators, ranges and faults.
//
// Options (combine):
// - `seed=S` (default 0) and `version=V` (default 0): content is `TestContent` for
//   `TestContent.seed(S, version: V)`; `ETag: "<n>-<S>-<V>"`; `Last-Modified` is
//   2024-01-01 plus V days. `versionKey=K` takes V from `setResourceVersion(_:key:)`, so the
//   resource can change between two requests for the same URL.
// - `etag=none` (only Last-Modified), `validators=none` (neither), `ranges=no` (ignore Range,
//   no Accept-Ranges).
// - `Range: bytes=a-`, `a-b`, `-k` → 206 + Content-Range; unsatisfiable → 416 with
//   `Content-Range: bytes */n`; several ranges → the whole body. `If-Range` (the ETag, or
//   the Last-Modified date verbatim) that does not match → 200 with the whole body.
// - `dropAfter=N`: close after N body bytes, only if the request has no Range header;
//   `dropAlways=N`: on every request.
// - `stallAfter=N&stallSeconds=T`: send N bytes, wait T seconds, send the rest.
// - `drip=B`: about B bytes per second, in twentieths of a second.
// - `lengthDelta=K`: declare Content-Length n+K, send the n bytes, close.
// - `digest=good|bad`: `Repr-Digest: sha-256=:<base64>:` (and `Content-Digest` on 200),
//   right or wrong.
// - `chunked=1`: no Content-Length, chunked transfer coding.
// - `claimCoding=C`: `Content-Encoding: C` on bytes that are not so coded (a server that lies).
import NIOCore
import NIOHTTP1

extension TestHTTPServer {
    func serveBytes(count n: Int, _ ex: Exchange, _ out: Responder) async throws -> Outcome {
        let q = ex.target
        let baseSeed = q.uint64("seed") ?? 0
        let version = q.query["versionKey"].map { resourceVersion(key: $0) } ?? q.uint64("version") ?? 0
        let seed = TestContent.seed(baseSeed, version: version)
        let validators = q.query["validators"] != "none"
        let etag = validators && q.query["etag"] != "none" ? "\"\(n)-\(baseSeed)-\(version)\"" : nil
        let lastModified = validators ? httpDate(daysAfter2024: Int(truncatingIfNeeded: version)) : nil
        let rangesAllowed = q.query["ranges"] != "no"

        var fields: [(String, String)] = [("content-type", "application/octet-stream")]
        if let etag { fields.append(("etag", etag)) }
        if let lastModified { fields.append(("last-modified", lastModified)) }
        if rangesAllowed { fields.append(("accept-ranges", "bytes")) }
        var digestField: String?
        if let mode = q.query["digest"] {
            var digest = digest(count: n, seed: seed)
            if mode == "bad" { digest[0] ^= 0xFF }
            digestField = "sha-256=:" + base64(digest) + ":"
            fields.append(("repr-digest", digestField!))
        }

        let rangeHeader = ex.head.headers.first(name: "range")
        var start = 0
        var length = n
        var status = HTTPResponseStatus.ok
        if rangesAllowed, let rangeHeader, ifRangeMatches(ex.head.headers.first(name: "if-range"), etag, lastModified) {
            switch parseRange(rangeHeader, size: n) {
            case .ignore:
                break
            case .unsatisfiable:
                fields.append(("content-range", "bytes */\(n)"))
                fields.append(("content-length", "0"))
                try await out.head(.rangeNotSatisfiable, fields)
                try await out.end()
                return .keepAlive
            case .range(let a, let b):
                status = .partialContent
                start = a
                length = b - a + 1
                fields.append(("content-range", "bytes \(a)-\(b)/\(n)"))
            }
        }
        if status == .ok, let digestField { fields.append(("content-digest", digestField)) }
        if let coding = q.query["claimCoding"] { fields.append(("content-encoding", coding)) }

        let chunked = q.query["chunked"] == "1"
        let delta = q.int("lengthDelta") ?? 0
        if chunked {
            fields.append(("transfer-encoding", "chunked"))
        } else {
            fields.append(("content-length", String(length + delta)))
        }
        try await out.head(status, fields)
        if out.isHead {
            try await out.end()
            return .keepAlive
        }

        let dropAt = q.int("dropAlways") ?? (rangeHeader == nil ? q.int("dropAfter") : nil)
        let stallAfter = q.int("stallAfter")
        let stallSeconds = Double(q.query["stallSeconds"] ?? "") ?? 0
        let drip = q.int("drip").flatMap { $0 > 0 ? $0 : nil }
        var sent = 0
        var stalled = false
        // Bounded: every pass sends at least one byte, stalls once, or returns.
        while sent < length {
            if let dropAt, sent >= dropAt { return .close }
            if let stallAfter, !stalled, sent >= stallAfter {
                stalled = true
                try await Task.sleep(for: .seconds(stallSeconds))
                continue
            }
            var chunk = min(256 * 1024, length - sent)
            if let dropAt { chunk = min(chunk, dropAt - sent) }
            if let stallAfter, !stalled { chunk = min(chunk, stallAfter - sent) }
            if let drip { chunk = min(chunk, max(1, drip / 20)) }
            var buffer = out.channel.allocator.buffer(capacity: chunk)
            TestContent.write(into: &buffer, offset: start + sent, count: chunk, seed: seed)
            try await out.body(buffer)
            sent += chunk
            state.withLock { $0.bytesBodySent += chunk }
            if let drip { try await Task.sleep(for: .seconds(Double(chunk) / Double(drip))) }
        }
        if delta != 0 && !chunked { return .close }
        try await out.end()
        return .keepAlive
    }

    /// SHA-256 of a whole `/bytes` representation, cached per size and seed.
    private func digest(count: Int, seed: UInt64) -> [UInt8] {
        let key = "\(count)-\(seed)"
        if let known = state.withLock({ $0.digests[key] }) { return known }
        let digest = TestContent.sha256(count: count, seed: seed)
        state.withLock { $0.digests[key] = digest }
        return digest
    }
}

/// Whether a `Range` applies given `If-Range` (absent, or equal to a validator we sent).
func ifRangeMatches(_ ifRange: String?, _ etag: String?, _ lastModified: String?) -> Bool {
    guard let ifRange = ifRange?.trimmingSpaces else { return true }
    if let etag, ifRange == etag { return true }
    if let lastModified, ifRange == lastModified { return true }
    return false
}

enum ByteRange: Equatable {
    case ignore
    case unsatisfiable
    case range(Int, Int)  // inclusive
}

/// Parses a single `bytes=` range against a representation of `size` bytes.
func parseRange(_ header: String, size: Int) -> ByteRange {
    let value = header.trimmingSpaces
    guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else { return .ignore }
    let spec = value.dropFirst("bytes=".count).trimmingSpaces
    let ends = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
    guard ends.count == 2 else { return .ignore }
    let first = ends[0].isEmpty ? nil : Int(ends[0])
    let last = ends[1].isEmpty ? nil : Int(ends[1])
    if !ends[0].isEmpty && first == nil || !ends[1].isEmpty && last == nil { return .ignore }
    switch (first, last) {
    case (let a?, nil):
        return a < size ? .range(a, size - 1) : .unsatisfiable
    case (let a?, let b?):
        guard a <= b else { return .ignore }
        return a < size ? .range(a, min(b, size - 1)) : .unsatisfiable
    case (nil, let k?):
        guard k > 0, size > 0 else { return .unsatisfiable }
        return .range(max(0, size - k), size - 1)
    case (nil, nil):
        return .ignore
    }
}

/// An IMF-fixdate (`Mon, 01 Jan 2024 00:00:00 GMT`) for 2024-01-01 plus `days`.
func httpDate(daysAfter2024 days: Int) -> String {
    let z = 19723 + days + 719_468  // days since 1970-01-01, shifted to 0000-03-01
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    let weekday = weekdays[((19723 + days) % 7 + 7) % 7]
    let dd = day < 10 ? "0\(day)" : "\(day)"
    return "\(weekday), \(dd) \(months[month - 1]) \(year) 00:00:00 GMT"
}

/// Standard base64 with padding.
func base64(_ bytes: [UInt8]) -> String {
    let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    var i = 0
    while i < bytes.count {
        let b0 = bytes[i]
        let b1 = i + 1 < bytes.count ? bytes[i + 1] : 0
        let b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
        out.append(table[Int(b0 >> 2)])
        out.append(table[Int((b0 & 0x3) << 4 | b1 >> 4)])
        out.append(i + 1 < bytes.count ? table[Int((b1 & 0xF) << 2 | b2 >> 6)] : UInt8(ascii: "="))
        out.append(i + 2 < bytes.count ? table[Int(b2 & 0x3F)] : UInt8(ascii: "="))
        i += 3
    }
    return String(decoding: out, as: UTF8.self)
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
