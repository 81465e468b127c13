// Reading requests off one connection and writing responses with exact flush points.
import Crypto
import NIOCore
import NIOHTTP1

extension TestHTTPServer {
    /// What to do with the connection after a request was answered.
    enum Outcome { case keepAlive, close }

    /// One request being answered: its head, the parsed target, the body summary.
    struct Exchange {
        var head: HTTPRequestHead
        var target: Target
        var bodyLength = 0
        var bodySHA256 = RecordedRequest.emptySHA256
        var connection: Int
    }

    /// Serves requests on one connection until it closes or a route closes it.
    func serve(_ connection: Connection, number: Int) async throws {
        let channel = connection.channel
        try await connection.executeThenClose { inbound, _ in
            var parts = inbound.makeAsyncIterator()
            // Bounded: a keep-alive connection serves at most this many requests.
            for _ in 0..<100_000 {
                guard let part = try await parts.next() else { return }
                guard case .head(let head) = part else { continue }
                let target = Target(uri: head.uri)
                let id = record(
                    RecordedRequest(
                        method: head.method.rawValue, uri: head.uri,
                        headers: head.headers.map { ($0.name, $0.value) }, connection: number))
                var exchange = Exchange(head: head, target: target, connection: number)
                let isUpload = (head.method == .PUT || head.method == .POST) && target.path.hasPrefix("/upload")
                var limit = isUpload ? target.int("dropAfter") : nil
                if limit != nil, let key = target.query["dropOnce"], countUse("dropOnce:" + key) > 1 { limit = nil }
                if head.headers.first(name: "expect")?.lowercased() == "100-continue" {
                    let proceed = HTTPResponseHead(version: .http1_1, status: .continue)
                    try await channel.writeAndFlush(HTTPServerResponsePart.head(proceed)).get()
                }
                let body = try await readBody(&parts, cutAfter: limit)
                updateRecord(id, bodyLength: body.length, sha256: body.sha256)
                if body.cut { return }
                exchange.bodyLength = body.length
                exchange.bodySHA256 = body.sha256
                let out = Responder(channel: channel, keepAlive: head.isKeepAlive, isHead: head.method == .HEAD)
                let outcome = try await route(exchange, out, depth: 0)
                if outcome == .close || !head.isKeepAlive { return }
            }
        }
    }

    /// Reads body parts up to `.end`, hashing as it goes, never buffering the body.
    /// With `cutAfter`, stops once that many bytes arrived and reports `cut`.
    private func readBody(
        _ parts: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator, cutAfter: Int?
    ) async throws -> (length: Int, sha256: String, cut: Bool) {
        var hasher = SHA256()
        var length = 0
        while let part = try await parts.next() {
            switch part {
            case .head:
                return (length, TestContent.hex(hasher.finalize()), true)  // protocol confusion: give up
            case .body(let buffer):
                var buffer = buffer
                if let cutAfter, length + buffer.readableBytes >= cutAfter {
                    let keep = cutAfter - length
                    buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: .init(rebasing: $0[0..<keep])) }
                    length += keep
                    return (length, TestContent.hex(hasher.finalize()), true)
                }
                length += buffer.readableBytes
                buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                buffer.clear()
            case .end:
                return (length, TestContent.hex(hasher.finalize()), false)
            }
        }
        return (length, TestContent.hex(hasher.finalize()), true)
    }
}

/// Writes one response, awaiting each flush so a following close loses nothing.
struct Responder {
    let channel: any Channel
    let keepAlive: Bool
    let isHead: Bool

    func head(_ status: HTTPResponseStatus, _ fields: [(String, String)]) async throws {
        var headers = HTTPHeaders(fields)
        if !keepAlive { headers.replaceOrAdd(name: "connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        try await channel.writeAndFlush(HTTPServerResponsePart.head(head)).get()
    }

    func body(_ buffer: ByteBuffer) async throws {
        guard !isHead, buffer.readableBytes > 0 else { return }
        try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer))).get()
    }

    func end() async throws {
        try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
    }

    /// A complete response with a small body and `Content-Length`.
    func simple(
        _ status: HTTPResponseStatus, _ text: String, contentType: String = "text/plain",
        _ extra: [(String, String)] = []
    ) async throws {
        let noBody = status.code == 204 || status.code == 304 || status.code < 200
        var fields = extra
        if noBody {
            try await head(status, fields)
        } else {
            fields.append(("content-type", contentType))
            fields.append(("content-length", String(text.utf8.count)))
            try await head(status, fields)
            try await body(channel.allocator.buffer(string: text))
        }
        try await end()
    }

    /// Writes bytes below the HTTP encoder, straight to the socket.
    func raw(_ bytes: [UInt8]) async throws {
        let buffer = channel.allocator.buffer(bytes: bytes)
        let channel = self.channel
        try await channel.eventLoop.flatSubmit {
            do {
                let context = try channel.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
                return context.writeAndFlush(NIOAny(buffer))
            } catch {
                return channel.eventLoop.makeFailedFuture(error)
            }
        }.get()
    }
}

/// A request target split into path and decoded query parameters (first value wins).
struct Target {
    var path: String
    var query: [String: String]

    init(uri: String) {
        let halves = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = String(halves.first ?? "")
        query = [:]
        if halves.count > 1 {
            for pair in halves[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = Self.decode(kv[0])
                if query[key] == nil { query[key] = kv.count > 1 ? Self.decode(kv[1]) : "" }
            }
        }
    }

    /// Path components after the leading slash.
    var components: [String] { path.split(separator: "/").map(String.init) }

    func int(_ name: String) -> Int? { query[name].flatMap { Int($0) } }
    func uint64(_ name: String) -> UInt64? { query[name].flatMap { UInt64($0) } }

    static func decode<S: StringProtocol>(_ s: S) -> String {
        var out: [UInt8] = []
        var bytes = Array(s.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%"), bytes.count >= 2,
                let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
            {
                out.append(v)
                bytes = bytes.dropFirst(2)
            } else if b == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Percent-encodes everything but unreserved characters and `/`.
    static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%" + (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true)
            }
        }
        return out
    }
}

/// Minimal JSON string quoting for the small JSON bodies the servers answer.
func jsonString(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 {
                let h = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}
