import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The files API in Dropbox v1's shape (root `dropbox`): metadata, download, upload, search,
/// thumbnails. Folder operations are in `FileOpsRoutes.swift`, chunked uploads in
/// `ChunkedUploadRoutes.swift`.
struct FilesRoutes: Sendable {
    let state: ServerState

    static let roots: Set<String> = ["dropbox", "sandbox", "auto"]

    func add(to router: Routes) {
        for suffix in ["", "/**"] {
            router.get("/1/metadata/:root\(suffix)") { request, context in try await metadata(request, context) }
            router.get("/1/files/:root\(suffix)") { request, context in try await download(request, context) }
            router.head("/1/files/:root\(suffix)") { request, context in try await download(request, context) }
            router.put("/1/files_put/:root\(suffix)") { request, context in try await put(request, context) }
            router.post("/1/files_put/:root\(suffix)") { request, context in try await put(request, context) }
            router.post("/1/files/:root\(suffix)") { request, context in try await formUpload(request, context) }
            router.get("/1/search/:root\(suffix)") { request, context in try await search(request, context) }
            router.post("/1/search/:root\(suffix)") { request, context in try await search(request, context) }
            router.get("/1/thumbnails/:root\(suffix)") { request, context in try await thumbnail(request, context) }
        }
    }

    /// Root and path from `/1/<operation>/<root>/<path…>`, taken from the raw (still
    /// percent-encoded) request path so that an encoded slash cannot become a separator.
    static func location(_ request: Request) throws(APIError) -> (root: String, path: DropboxPath) {
        let raw = request.uri.path
        let pieces = raw.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        // "", "1", operation, "root/rest…"
        guard pieces.count >= 3 else { throw APIError.badParameter("root") }
        let tail = pieces.count > 3 ? pieces[3] : ""
        let rootEnd = tail.firstIndex(of: "/") ?? tail.endIndex
        let root = String(tail[..<rootEnd])
        guard roots.contains(root) else { throw APIError.badParameter("root", "expected 'dropbox'") }
        return (root == "auto" ? "dropbox" : root, try DropboxPath.parse(encoded: tail[rootEnd...]))
    }

    func metadata(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let (root, path) = try Self.location(request)
        let parameters = try await state.parameters(request)
        let list = try parameters.bool("list", default: true)
        let limit = try parameters.int("file_limit", default: state.configuration.defaultFileLimit, range: 1...25_000)
        let entry = path.isRoot ? nil : try await state.store.entry(account.namespaceId, path)
        if !path.isRoot && entry == nil { throw APIError.notFound(path.display) }
        guard path.isRoot || entry!.isDir else {
            return try .jsonObject(Metadata.object(entry!, root: root))
        }
        let children = try await state.store.children(account.namespaceId, path)
        let hash = Metadata.folderHash(children)
        if let known = parameters["hash"], known == hash {
            return Response(status: .notModified)
        }
        if list && children.count > limit {
            throw APIError(.notAcceptable, "Too many entries (\(children.count)) for file_limit \(limit)")
        }
        let contents = list ? children : nil
        let object = path.isRoot
            ? Metadata.rootObject(root: root, contents: contents, hash: hash)
            : Metadata.object(entry!, root: root, contents: contents, hash: hash)
        return try .jsonObject(object)
    }

    func download(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let (root, path) = try Self.location(request)
        guard let entry = try await state.store.entry(account.namespaceId, path), !entry.isDir, let blob = entry.blob else {
            throw APIError.notFound(path.display)
        }
        if let rev = request.uri.queryParameters["rev"], rev != entry.rev {
            throw APIError(.notFound, "Revision '\(rev)' of '\(path.display)' not found")
        }
        var headers = HTTPFields()
        headers[HTTPField.Name("x-dropbox-metadata")!] = try Self.compactJSON(Metadata.object(entry, root: root))
        let serving = FileServing(
            path: state.blobs.path(of: blob), size: entry.bytes, etag: "\"\(entry.rev)\"",
            modified: entry.modified, contentType: entry.mimeType ?? "application/octet-stream", extraHeaders: headers)
        return try await serving.response(request, context: context, fileIO: state.fileIO)
    }

    func put(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let (root, path) = try Self.location(request)
        guard !path.isRoot else { throw APIError.badParameter("path", "a file name is needed") }
        let query = request.uri.queryParameters.reduce(into: [String: String]()) { $0[String($1.key)] = String($1.value) }
        let mode = try WriteMode(query)
        let existing = try await state.store.entry(account.namespaceId, path)
        let reclaimable = existing.map { $0.isDir ? 0 : $0.bytes } ?? 0
        let (blob, bytes) = try await state.receiveBlob(request, account: account, reclaimable: reclaimable)
        return try await commit(blob: blob, bytes: bytes, account: account, root: root, path: path, mode: mode, context: context)
    }

    /// Puts a durable blob into the tree and answers with its metadata; on failure the blob goes.
    func commit(blob: String, bytes: Int64, account: Account, root: String, path: DropboxPath, mode: WriteMode,
                context: ByteClubContext) async throws -> Response {
        do {
            let (entry, replaced) = try await state.store.putFile(
                author: account, path: path, blob: blob, bytes: bytes, mode: mode, quota: state.configuration.quotaBytes)
            if let replaced { state.blobs.remove(blob: replaced) }
            context.logger.info("stored file", metadata: ["path": "\(entry.pathDisplay)", "bytes": "\(bytes)", "rev": "\(entry.rev)"])
            return try .jsonObject(Metadata.object(entry, root: root))
        } catch {
            state.blobs.remove(blob: blob)
            throw error
        }
    }

    /// Dropbox v1's `POST /files/<root>/<folder>` with a multipart `file` field.
    func formUpload(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let (root, folder) = try Self.location(request)
        guard let boundary = Multipart.boundary(request.headers[.contentType]) else {
            throw APIError.badParameter("Content-Type", "expected multipart/form-data")
        }
        let limit = Int(min(state.configuration.maxBodyBytes, 150 << 20))
        let body = try await state.collect(request, limit: limit)
        let parts = try Multipart.parse(Array(buffer: body), boundary: boundary)
        guard let file = parts.first(where: { $0.name == "file" }) else { throw APIError.badParameter("file", "missing") }
        let name = file.filename.flatMap { $0.isEmpty ? nil : $0 } ?? "upload"
        let path = try DropboxPath.parse(decoded: folder.display + "/" + name)
        let query = request.uri.queryParameters.reduce(into: [String: String]()) { $0[String($1.key)] = String($1.value) }
        var mode = try WriteMode(query)
        mode.autorename = true
        let temp = try state.blobs.makeTemp()
        let blob: String
        do {
            try temp.write(ByteBuffer(bytes: file.data))
            blob = try state.blobs.commit(temp)
        } catch {
            temp.discard()
            throw error
        }
        return try await commit(blob: blob, bytes: Int64(file.data.count), account: account, root: root, path: path, mode: mode, context: context)
    }

    func search(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let (root, path) = try Self.location(request)
        let parameters = try await state.parameters(request)
        guard let query = parameters["query"]?.trimmingCharacters(in: .whitespaces), !query.isEmpty else {
            throw APIError.badParameter("query", "missing")
        }
        let limit = try parameters.int("file_limit", default: 1000, range: 1...1000)
        let found = try await state.store.search(account.namespaceId, under: path, query: query, limit: limit)
        return try .jsonObject(found.map { Metadata.object($0, root: root) })
    }

    static func compactJSON(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    }
}
