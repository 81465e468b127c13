import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Request bins in RequestBin's shape: `POST /bins` makes one; any method to `/bins/<id>` or
/// below is recorded (method, path, query, headers, body up to a bound, time, client address);
/// `GET /bins/<id>/requests` lists them newest first; `GET /bins/<id>?inspect` shows them.
struct BinsRoutes: Sendable {
    let state: ServerState

    func add(to router: Routes) {
        router.post("/bins") { request, context in try await create(request, context) }
        router.get("/bins/:id/requests") { request, context in try await list(request, context) }
        let methods: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete, .head, .options]
        for method in methods {
            for path in ["/bins/:id", "/bins/:id/**"] {
                router.on(path, method: method) { request, context in try await record(request, context) }
            }
        }
    }

    func create(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let id = ServerState.randomToken(5)
        let now = Date().timeIntervalSince1970
        try await state.store.createBin(id: id, created: now)
        let url = "\(state.baseURL)/bins/\(id)"
        context.logger.info("created bin", metadata: ["bin": "\(id)"])
        return try .jsonObject(["id": id, "name": id, "url": url, "inspect_url": url + "?inspect",
                                "requests_url": url + "/requests"], status: .created, headers: [.location: url])
    }

    private func binID(_ context: ByteClubContext) async throws -> String {
        let id = context.parameters.get("id") ?? ""
        guard try await state.store.binExists(id) else {
            throw APIError(.notFound, "Bin '\(id)' not found")
        }
        return id
    }

    func record(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let id = try await binID(context)
        if request.method == .get, request.uri.queryParameters["inspect"] != nil,
           request.uri.path.split(separator: "/").count == 2 {
            return try await inspect(id)
        }
        var body = ByteBuffer()
        var total: Int64 = 0
        let keep = state.configuration.binBodyLimit
        for try await var buffer in request.body {
            total += Int64(buffer.readableBytes)
            if body.readableBytes < keep, let slice = buffer.readSlice(length: min(buffer.readableBytes, keep - body.readableBytes)) {
                var slice = slice
                body.writeBuffer(&slice)
            }
        }
        var headers: [[String]] = []
        for field in request.headers {
            let sensitive = field.name == .authorization || field.name == .cookie
            headers.append([field.name.rawName, sensitive ? "(redacted)" : field.value])
        }
        let headerJSON = String(decoding: try JSONSerialization.data(withJSONObject: headers), as: UTF8.self)
        let row = BinRequest(
            id: nil, binId: id, method: request.method.rawValue, path: request.uri.path, query: request.uri.query,
            headers: headerJSON, body: Data(buffer: body), bodyBytes: total, truncated: total > Int64(body.readableBytes),
            remoteAddr: context.clientAddress, time: Date().timeIntervalSince1970)
        let limit = state.configuration.binRequestLimit
        let recorded = try await state.store.record(row, keep: limit)
        return try .jsonObject(["ok": true, "bin": id, "recorded": recorded])
    }

    func requests(_ id: String) async throws -> [BinRequest] {
        try await state.store.requests(bin: id)
    }

    func list(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let id = try await binID(context)
        let objects: [[String: Any]] = try await requests(id).map { row in
            let headers = (try? JSONSerialization.jsonObject(with: Data(row.headers.utf8))) as? [[String]] ?? []
            let body = row.body ?? Data()
            let text = String(data: body, encoding: .utf8)
            return [
                "id": row.id ?? 0, "method": row.method, "path": row.path, "query": row.query ?? "",
                "headers": Dictionary(headers.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }, uniquingKeysWith: { a, b in a + ", " + b }),
                "body": text ?? "", "body_base64": text == nil ? body.base64EncodedString() : NSNull(),
                "body_bytes": row.bodyBytes, "truncated": row.truncated, "remote_addr": row.remoteAddr ?? "",
                "time": Metadata.rfc2822(row.time), "timestamp": row.time,
            ]
        }
        return try .jsonObject(objects)
    }

    func inspect(_ id: String) async throws -> Response {
        let rows = try await requests(id)
        var html = Page.head(title: "Bin \(id)")
        html += "<h1>Bin <code>\(Page.escape(id))</code></h1><p>\(rows.count) request(s), newest first. "
        html += "Send anything to <code>\(Page.escape(state.baseURL))/bins/\(Page.escape(id))</code>.</p>"
        for row in rows {
            let headers = (try? JSONSerialization.jsonObject(with: Data(row.headers.utf8))) as? [[String]] ?? []
            html += "<section class=req><h2><span class=method>\(Page.escape(row.method))</span> \(Page.escape(row.path))"
            if let query = row.query, !query.isEmpty { html += "?\(Page.escape(query))" }
            html += "</h2><p class=meta>\(Metadata.rfc2822(row.time)) from \(Page.escape(row.remoteAddr ?? "?")) · \(row.bodyBytes) bytes"
            html += row.truncated ? " (truncated)" : ""
            html += "</p><table>"
            for pair in headers where pair.count == 2 {
                html += "<tr><th>\(Page.escape(pair[0]))</th><td>\(Page.escape(pair[1]))</td></tr>"
            }
            html += "</table><pre>\(Page.escape(String(decoding: row.body ?? Data(), as: UTF8.self)))</pre></section>"
        }
        html += "</body></html>"
        return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}
