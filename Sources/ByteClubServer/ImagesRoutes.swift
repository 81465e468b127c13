import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The images API in Imgur v3's shape: `POST /3/image` (and `/3/upload`), `GET /3/image/<id>`,
/// `DELETE /3/image/<deletehash>`, and the image itself at `/i/<id>.<ext>` (its `link`).
/// Every call spends the caller's rate-limit budget and reports it in `X-RateLimit-*`.
struct ImagesRoutes: Sendable {
    let state: ServerState

    func add(to router: Routes) {
        router.post("/3/image") { request, context in try await upload(request, context) }
        router.post("/3/upload") { request, context in try await upload(request, context) }
        router.get("/3/image/:id") { request, context in try await show(request, context) }
        router.delete("/3/image/:id") { request, context in try await delete(request, context) }
        router.get("/i/:file") { request, context in try await raw(request, context) }
        router.head("/i/:file") { request, context in try await raw(request, context) }
    }

    /// Authenticates and spends one request; throws 429 (with the headers) when out of budget.
    private func admit(_ request: Request, _ context: ByteClubContext) async throws -> (Account, HTTPFields) {
        let (account, clientID) = try await state.imagesAccount(request)
        let verdict = state.rateLimiter.spend(clientID: clientID, user: context.clientAddress)
        var headers = state.rateLimiter.headers(verdict)
        guard verdict.allowed else {
            headers[.retryAfter] = String(max(1, Int(verdict.userReset.timeIntervalSinceNow.rounded(.up))))
            var error = APIError(.tooManyRequests, "Rate limit exceeded: try again after X-RateLimit-UserReset", headers: headers)
            error.imgurStyle = true
            throw error
        }
        return (account, headers)
    }

    private func envelope(_ data: Any, headers: HTTPFields) throws -> Response {
        try .jsonObject(["data": data, "success": true, "status": 200], headers: headers)
    }

    private func imgurError(_ status: HTTPResponse.Status, _ message: String, _ headers: HTTPFields) -> APIError {
        var error = APIError(status, message, headers: headers)
        error.imgurStyle = true
        return error
    }

    func upload(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let (account, headers) = try await admit(request, context)
        let limit = state.configuration.maxImageBytes
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        var fields: [String: String] = [:]
        for (key, value) in request.uri.queryParameters { fields[String(key)] = String(value) }
        var bytes: [UInt8]
        do {
            // base64 grows data by a third; allow for it before decoding.
            let body = Array(buffer: try await state.collect(request, limit: limit * 4 / 3 + 4096))
            if let boundary = Multipart.boundary(request.headers[.contentType]) {
                let parts = try Multipart.parse(body, boundary: boundary)
                for part in parts where part.name != "image" && part.name != nil { fields[part.name!] = part.text }
                guard let image = parts.first(where: { $0.name == "image" }) else {
                    throw imgurError(.badRequest, "Invalid value for parameter 'image': missing", headers)
                }
                let isFile = image.filename != nil || (image.contentType.map { !$0.hasPrefix("text/") } ?? false)
                bytes = isFile && fields["type"] != "base64" ? image.data : try decodeText(image.text, headers)
            } else if contentType.hasPrefix("application/x-www-form-urlencoded") {
                for (key, value) in ServerState.decodeForm(String(decoding: body, as: UTF8.self)) { fields[key] = value }
                bytes = try decodeText(fields["image"] ?? "", headers)
            } else if contentType.hasPrefix("application/json") {
                let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
                for (key, value) in object { if let text = value as? String { fields[key] = text } }
                bytes = try decodeText(fields["image"] ?? "", headers)
            } else {
                bytes = body
            }
        } catch var error as APIError {
            error.imgurStyle = true
            error.headers = headers
            throw error
        }
        guard !bytes.isEmpty else { throw imgurError(.badRequest, "Invalid value for parameter 'image': empty", headers) }
        guard bytes.count <= limit else { throw imgurError(.contentTooLarge, "Image larger than \(limit) bytes", headers) }
        guard let (mime, ext) = Self.sniff(bytes) else {
            throw imgurError(.badRequest, "Invalid value for parameter 'image': not a JPEG, PNG, GIF, WebP, TIFF or BMP image", headers)
        }
        let used = try await state.usedBytes(namespace: account.namespaceId)
        if used + Int64(bytes.count) > state.configuration.quotaBytes {
            var error = APIError.overQuota
            error.imgurStyle = true
            error.headers = headers
            throw error
        }
        let temp = try state.blobs.makeTemp()
        let blob: String
        do {
            try temp.write(ByteBuffer(bytes: bytes))
            blob = try state.blobs.commit(temp)
        } catch {
            temp.discard()
            throw error
        }
        guard let (width, height) = Vips.dimensions(path: state.blobs.path(of: blob)) else {
            state.blobs.remove(blob: blob)
            throw imgurError(.badRequest, "Invalid value for parameter 'image': the image is corrupt or its format unsupported", headers)
        }
        let record = ImageRecord(
            id: ServerState.randomToken(4).prefix(7).description, accountId: account.id!,
            deletehash: ServerState.randomToken(8), title: fields["title"], description: fields["description"],
            mimeType: mime, width: width, height: height, bytes: Int64(bytes.count),
            datetime: Int64(Date().timeIntervalSince1970), blob: blob)
        do {
            try await state.store.insertImage(record)
        } catch {
            state.blobs.remove(blob: blob)
            throw error
        }
        context.logger.info("stored image", metadata: ["id": "\(record.id)", "bytes": "\(bytes.count)", "size": "\(width)x\(height)"])
        _ = ext
        return try envelope(object(record, owner: true), headers: headers)
    }

    private func decodeText(_ text: String, _ headers: HTTPFields) throws -> [UInt8] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("http://") || trimmed.hasPrefix("https://") {
            throw imgurError(.badRequest, "Invalid value for parameter 'image': URL uploads are not supported here", headers)
        }
        let payload = trimmed.range(of: "base64,").map { String(trimmed[$0.upperBound...]) } ?? trimmed
        guard let data = Data(base64Encoded: payload, options: .ignoreUnknownCharacters) else {
            throw imgurError(.badRequest, "Invalid value for parameter 'image': not valid base64", headers)
        }
        return Array(data)
    }

    func show(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let (account, headers) = try await admit(request, context)
        let id = context.parameters.get("id") ?? ""
        guard let record = try await state.store.image(id: id) else {
            throw imgurError(.notFound, "Unable to find an image with the id '\(id)'", headers)
        }
        return try envelope(object(record, owner: record.accountId == account.id), headers: headers)
    }

    func delete(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let (account, headers) = try await admit(request, context)
        let key = context.parameters.get("id") ?? ""
        let accountID = account.id!
        guard let removed = try await state.store.deleteImage(key: key, account: accountID) else { throw imgurError(.notFound, "Unable to find an image with the deletehash '\(key)'", headers) }
        state.blobs.remove(blob: removed.blob)
        return try envelope(true, headers: headers)
    }

    /// The image bytes at its `link`, with ranges; no credentials, as Imgur's `i.` host. With
    /// one of Imgur's size letters after the id (`<id>m.jpg`), a thumbnail instead, made by
    /// libvips (``thumbnailSizes``).
    func raw(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let file = context.parameters.get("file") ?? ""
        let name = String(file.prefix { $0 != "." })
        let ext = file.dropFirst(name.count + 1).lowercased()
        if let record = try await state.store.image(id: name) {
            let serving = FileServing(
                path: state.blobs.path(of: record.blob), size: record.bytes, etag: "\"\(record.id)\"",
                modified: Double(record.datetime), contentType: record.mimeType)
            return try await serving.response(request, context: context, fileIO: state.fileIO)
        }
        guard let letter = name.last, let side = Self.thumbnailSizes[letter],
              let record = try await state.store.image(id: String(name.dropLast()))
        else {
            throw APIError(.notFound, "Image '\(name)' not found")
        }
        guard ["jpg", "jpeg", "png"].contains(ext) else {
            throw APIError(.notFound, "Thumbnails are served as .jpg or .png, not '.\(ext)'")
        }
        let png = ext == "png"
        guard let thumbnail = try await state.thumbnailFile(ofBlob: record.blob, width: side, height: side, png: png,
                                                                   cropped: Self.squareThumbnails.contains(letter)) else {
            throw APIError(.unsupportedMediaType, "Image '\(record.id)' could not be decoded for a thumbnail")
        }
        let serving = FileServing(
            path: thumbnail, size: try ServerState.fileSize(thumbnail), etag: "\"\(record.id)\(letter)-\(png ? "png" : "jpeg")\"",
            modified: Double(record.datetime), contentType: png ? "image/png" : "image/jpeg")
        return try await serving.response(request, context: context, fileIO: state.fileIO)
    }

    /// Imgur's thumbnail letters and the square box each thumbnail fits in: `s` small square,
    /// `b` big square, `t` small, `m` medium, `l` large, `h` huge. As Imgur, `s` and `b` fill
    /// their square and are cropped around the centre; the others keep the image's proportions.
    /// An image id is 7 characters, so `<id><letter>` is never an id.
    static let thumbnailSizes: [Character: Int] = ["s": 90, "b": 160, "t": 160, "m": 320, "l": 640, "h": 1024]
    /// The letters whose thumbnails are square crops.
    static let squareThumbnails: Set<Character> = ["s", "b"]

    func object(_ record: ImageRecord, owner: Bool) -> [String: Any] {
        let ext = Self.extensions[record.mimeType] ?? "jpg"
        var object: [String: Any] = [
            "id": record.id, "title": record.title ?? NSNull(), "description": record.description ?? NSNull(),
            "datetime": record.datetime, "type": record.mimeType, "animated": false,
            "width": record.width, "height": record.height, "size": record.bytes,
            "views": 0, "bandwidth": 0, "favorite": false, "nsfw": NSNull(), "section": NSNull(),
            "account_url": NSNull(), "account_id": 0, "is_ad": false, "in_gallery": false, "name": "",
            "link": "\(state.baseURL)/i/\(record.id).\(ext)",
        ]
        if owner { object["deletehash"] = record.deletehash }
        return object
    }

    static let extensions = ["image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp",
                             "image/tiff": "tiff", "image/bmp": "bmp"]

    /// The image type from its first bytes (never from what the client claims).
    static func sniff(_ bytes: [UInt8]) -> (String, String)? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<(offset + prefix.count)]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return ("image/jpeg", "jpg") }
        if starts([0x89, 0x50, 0x4E, 0x47]) { return ("image/png", "png") }
        if starts(Array("GIF8".utf8)) { return ("image/gif", "gif") }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return ("image/webp", "webp") }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return ("image/tiff", "tiff") }
        if starts(Array("BM".utf8)) { return ("image/bmp", "bmp") }
        return nil
    }
}
