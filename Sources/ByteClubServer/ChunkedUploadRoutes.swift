import Foundation
import Hummingbird

/// Dropbox v1's `PUT /1/chunked_upload?upload_id=&offset=` and
/// `POST /1/commit_chunked_upload/<root>/<path>?upload_id=`: a large file in pieces, each
/// appended to a file under `chunks/` and made durable before its offset is acknowledged.
struct ChunkedUploadRoutes: Sendable {
    let state: ServerState
    static let lifetime: TimeInterval = 48 * 3600

    func add(to router: Routes) {
        router.put("/1/chunked_upload") { request, context in try await chunk(request, context) }
        router.post("/1/chunked_upload") { request, context in try await chunk(request, context) }
        router.post("/1/commit_chunked_upload/:root/**") { request, context in try await commit(request, context) }
    }

    private func status(id: String, offset: Int64, expires: Double) -> [String: Any] {
        ["upload_id": id, "offset": offset, "expires": Metadata.rfc2822(expires)]
    }

    func chunk(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let accountID = account.id!
        let query = request.uri.queryParameters
        let offset = try query["offset"].map { value throws(APIError) -> Int64 in
            guard let number = Int64(value), number >= 0 else { throw APIError.badParameter("offset") }
            return number
        } ?? 0
        let id: String
        var expires = Date().timeIntervalSince1970 + Self.lifetime
        if let given = query["upload_id"].map(String.init) {
            guard let (current, storedExpiry) = try await state.store.chunkedUpload(id: given, account: accountID) else {
                throw APIError(.notFound, "Upload '\(given)' not found or expired")
            }
            expires = storedExpiry
            if current != offset {
                var error = APIError(.badRequest, "Invalid value for parameter 'offset': the upload is at \(current)")
                error.message += " (upload_id \(given), offset \(current))"
                throw error
            }
            id = given
        } else {
            guard offset == 0 else { throw APIError.badParameter("offset", "a new upload starts at 0") }
            id = ServerState.randomToken(12)
            try await state.store.createChunkedUpload(id: id, account: accountID, expires: expires)
        }
        // Bytes past the acknowledged offset (an interrupted chunk) are dropped first.
        if BlobStore.size(of: state.blobs.chunkPath(of: id)) ?? 0 > offset {
            truncate(state.blobs.chunkPath(of: id), off_t(offset))
        }
        let file = try TempFile(path: state.blobs.chunkPath(of: id), append: true)
        do {
            let room = state.configuration.quotaBytes - (try await state.usedBytes(namespace: account.namespaceId)) - offset
            try await state.stream(request.body, into: file, limit: min(state.configuration.maxBodyBytes, 150 << 20) + offset, room: room + offset)
            try file.sync()
            try file.close()
        } catch {
            // Back to the acknowledged offset, so a retry of this chunk starts clean.
            try? file.close()
            truncate(state.blobs.chunkPath(of: id), off_t(offset))
            throw error
        }
        let newOffset = file.bytesWritten
        try await state.store.setChunkedUploadOffset(id: id, offset: newOffset)
        return try .jsonObject(status(id: id, offset: newOffset, expires: expires))
    }

    func commit(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let accountID = account.id!
        let (root, path) = try FilesRoutes.location(request)
        let parameters = try await state.parameters(request)
        guard let id = parameters["upload_id"] else { throw APIError.badParameter("upload_id", "missing") }
        let mode = try WriteMode(parameters)
        guard let (offset, _) = try await state.store.chunkedUpload(id: id, account: accountID) else {
            throw APIError(.notFound, "Upload '\(id)' not found or expired")
        }
        let chunkPath = state.blobs.chunkPath(of: id)
        if !FileManager.default.fileExists(atPath: chunkPath), !FileManager.default.createFile(atPath: chunkPath, contents: nil) {
            throw APIError(.internalServerError, "cannot create the upload's chunk file")
        }
        truncate(chunkPath, off_t(offset))
        let blob = try state.blobs.adopt(path: chunkPath)
        try await state.store.removeChunkedUpload(id: id)
        return try await FilesRoutes(state: state).commit(
            blob: blob, bytes: offset, account: account, root: root, path: path, mode: mode, context: context)
    }
}
