import Foundation
import Hummingbird

/// Dropbox v1's `/1/fileops/create_folder`, `/delete` and `/move`; parameters (`root`,
/// `path`, `from_path`, `to_path`) in the query or a form body.
struct FileOpsRoutes: Sendable {
    let state: ServerState

    func add(to router: Routes) {
        router.post("/1/fileops/create_folder") { request, context in try await createFolder(request, context) }
        router.post("/1/fileops/delete") { request, context in try await delete(request, context) }
        router.post("/1/fileops/move") { request, context in try await move(request, context) }
    }

    private func common(_ request: Request) async throws -> (Account, String, [String: String]) {
        let account = try await state.filesAccount(request)
        let parameters = try await state.parameters(request)
        let root = parameters["root"] ?? "dropbox"
        guard FilesRoutes.roots.contains(root) else { throw APIError.badParameter("root", "expected 'dropbox'") }
        return (account, root == "auto" ? "dropbox" : root, parameters)
    }

    private func path(_ parameters: [String: String], _ name: String) throws(APIError) -> DropboxPath {
        guard let raw = parameters[name] else { throw APIError.badParameter(name, "missing") }
        return try DropboxPath.parse(decoded: raw, parameter: name)
    }

    func createFolder(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let (account, root, parameters) = try await common(request)
        let entry = try await state.store.createFolder(author: account, path: try path(parameters, "path"))
        return try .jsonObject(Metadata.object(entry, root: root))
    }

    func delete(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let (account, root, parameters) = try await common(request)
        let (entry, blobs) = try await state.store.delete(author: account, path: try path(parameters, "path"))
        for blob in blobs { state.blobs.remove(blob: blob) }
        var object = Metadata.object(entry, root: root)
        object["is_deleted"] = true
        return try .jsonObject(object)
    }

    func move(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let (account, root, parameters) = try await common(request)
        let entry = try await state.store.move(
            author: account, from: try path(parameters, "from_path"), to: try path(parameters, "to_path"))
        return try .jsonObject(Metadata.object(entry, root: root))
    }
}
