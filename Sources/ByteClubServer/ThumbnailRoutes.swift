import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension FilesRoutes {
    /// Dropbox v1's sizes: name → bounding box.
    static let thumbnailSizes: [String: (Int, Int)] = [
        "xs": (32, 32), "s": (64, 64), "small": (32, 32), "m": (128, 128), "medium": (128, 128),
        "l": (640, 480), "large": (640, 480), "xl": (1024, 768),
    ]

    /// `GET /1/thumbnails/<root>/<path>?size=&format=`: made by libvips, cached on disk by blob
    /// (``ServerState/thumbnail(ofBlob:width:height:png:)``).
    func thumbnail(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let (root, path) = try Self.location(request)
        let sizeName = request.uri.queryParameters["size"].map(String.init) ?? "s"
        guard let (width, height) = Self.thumbnailSizes[sizeName] else {
            throw APIError.badParameter("size", "one of xs, s, m, l, xl")
        }
        let format = request.uri.queryParameters["format"].map { $0.lowercased() } ?? "jpeg"
        guard format == "jpeg" || format == "png" else { throw APIError.badParameter("format", "jpeg or png") }
        guard let entry = try await state.store.entry(account.namespaceId, path), !entry.isDir, let blob = entry.blob else {
            throw APIError.notFound(path.display)
        }
        guard Metadata.thumbnailable(entry.pathDisplay) else {
            throw APIError(.unsupportedMediaType, "'\(path.display)' is not an image that can be thumbnailed")
        }
        let png = format == "png"
        guard let file = try await state.thumbnailFile(ofBlob: blob, width: width, height: height, png: png) else {
            throw APIError(.unsupportedMediaType, "'\(path.display)' could not be decoded as an image")
        }
        var headers = HTTPFields()
        headers[HTTPField.Name("x-dropbox-metadata")!] = try Self.compactJSON(Metadata.object(entry, root: root))
        let serving = FileServing(
            path: file, size: try ServerState.fileSize(file), etag: "\"\(blob)-\(width)x\(height)-\(format)\"",
            modified: entry.modified, contentType: png ? "image/png" : "image/jpeg", extraHeaders: headers)
        return try await serving.response(request, context: context, fileIO: state.fileIO)
    }
}
