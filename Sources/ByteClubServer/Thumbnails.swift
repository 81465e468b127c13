import Foundation
import NIOPosix

extension ServerState {
    /// The path of a thumbnail of `blob` that fits `width`×`height` (never enlarged), as JPEG or
    /// PNG; nil when libvips cannot decode the blob. libvips runs on NIO's thread pool, not on
    /// Swift's cooperative threads. Thumbnails are cached on disk by blob name (blobs never
    /// change, so the cache never goes stale) and written by rename, so a reader never sees half
    /// of one.
    func thumbnailFile(ofBlob blob: String, width: Int, height: Int, png: Bool, cropped: Bool = false) async throws -> String? {
        let cached = blobs.thumbDir + "/\(blob)-\(width)x\(height)\(cropped ? "-crop" : "").\(png ? "png" : "jpeg")"
        let source = blobs.path(of: blob)
        let temp = blobs.tmpDir + "/" + UUID().uuidString.lowercased()
        return try await NIOThreadPool.singleton.runIfActive {
            if FileManager.default.fileExists(atPath: cached) { return cached }
            guard let made = Vips.thumbnail(path: source, width: width, height: height, png: png, cropped: cropped) else { return nil }
            do {
                try Data(made).write(to: URL(fileURLWithPath: temp))
                guard rename(temp, cached) == 0 else { throw APIError(.internalServerError, "Could not store a thumbnail (errno \(errno))") }
            } catch {
                unlink(temp)
                throw error
            }
            return cached
        }
    }

    /// The size in bytes of the file at `path` (a thumbnail just made or found).
    static func fileSize(_ path: String) throws -> Int64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
    }
}
