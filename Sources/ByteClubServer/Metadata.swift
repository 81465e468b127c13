import Crypto
import Foundation

/// Dropbox v1's metadata JSON for files and folders, as the Byte Club tutorial shows it.
enum Metadata {
    /// The object for one entry; `contents` and `hash` only for listed folders.
    static func object(_ entry: Entry, root: String, contents: [Entry]? = nil, hash: String? = nil) -> [String: Any] {
        var object: [String: Any] = [
            "bytes": entry.bytes,
            "size": humanSize(entry.bytes),
            "rev": entry.rev,
            "revision": entry.revision,
            "modified": rfc2822(entry.modified),
            "path": entry.pathDisplay,
            "is_dir": entry.isDir,
            "root": root,
            "thumb_exists": !entry.isDir && thumbnailable(entry.pathDisplay),
            "icon": entry.isDir ? "folder" : icon(for: entry.pathDisplay),
        ]
        if !entry.isDir {
            object["mime_type"] = entry.mimeType ?? mimeType(for: entry.pathDisplay)
            object["client_mtime"] = rfc2822(entry.modified)
        }
        if let uid = entry.modifierId {
            // Dropbox v1's shape for files in shared folders: who wrote this version.
            object["modifier"] = ["uid": uid, "display_name": entry.modifierName ?? ""] as [String: Any]
        }
        if let hash { object["hash"] = hash }
        if let contents { object["contents"] = contents.map { Self.object($0, root: root) } }
        return object
    }

    /// The root folder, which has no row.
    static func rootObject(root: String, contents: [Entry]?, hash: String?) -> [String: Any] {
        var object: [String: Any] = [
            "bytes": 0, "size": "0 bytes", "path": "/", "is_dir": true, "root": root,
            "thumb_exists": false, "icon": "folder",
        ]
        if let hash { object["hash"] = hash }
        if let contents { object["contents"] = contents.map { Self.object($0, root: root) } }
        return object
    }

    /// A folder's `hash`: changes whenever a child is added, removed or changed.
    static func folderHash(_ children: [Entry]) -> String {
        var hasher = Insecure.MD5()
        for child in children.sorted(by: { $0.pathLower < $1.pathLower }) {
            hasher.update(data: Data("\(child.pathDisplay)\u{0}\(child.revision)\u{0}\(child.bytes)\n".utf8))
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// "16 bytes", "225.4KB", "2.3MB", "1.1GB" as Dropbox wrote sizes.
    static func humanSize(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) bytes" }
        let units = ["KB", "MB", "GB", "TB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + units[unit]
    }

    /// RFC 2822 date in UTC: `Sat, 10 Aug 2013 21:56:50 +0000`.
    static func rfc2822(_ seconds: Double) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return String(format: "%@, %02d %@ %04d %02d:%02d:%02d +0000",
                      days[Int(parts.tm_wday)], Int(parts.tm_mday), months[Int(parts.tm_mon)],
                      Int(parts.tm_year) + 1900, Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// HTTP date (`Last-Modified`): RFC 2822 with `GMT`.
    static func httpDate(_ seconds: Double) -> String {
        rfc2822(seconds).replacingOccurrences(of: "+0000", with: "GMT")
    }

    static let mimeTypes: [String: String] = [
        "txt": "text/plain", "md": "text/markdown", "html": "text/html", "htm": "text/html",
        "css": "text/css", "js": "application/javascript", "json": "application/json",
        "xml": "application/xml", "csv": "text/csv", "pdf": "application/pdf", "zip": "application/zip",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif",
        "webp": "image/webp", "tif": "image/tiff", "tiff": "image/tiff", "bmp": "image/bmp",
        "heic": "image/heic", "svg": "image/svg+xml", "mp4": "video/mp4", "mov": "video/quicktime",
        "mp3": "audio/mpeg", "wav": "audio/wav",
    ]

    static func fileExtension(_ path: String) -> String {
        guard let dot = path.lastIndex(of: "."), let slash = path.lastIndex(of: "/"), dot > slash else { return "" }
        return path[path.index(after: dot)...].lowercased()
    }

    static func mimeType(for path: String) -> String {
        mimeTypes[fileExtension(path)] ?? "application/octet-stream"
    }

    static func thumbnailable(_ path: String) -> Bool {
        ["jpg", "jpeg", "png", "gif", "webp", "tif", "tiff", "bmp"].contains(fileExtension(path))
    }

    static func icon(for path: String) -> String {
        let mime = mimeType(for: path)
        if mime.hasPrefix("image/") { return "page_white_picture" }
        if mime == "application/pdf" { return "page_white_acrobat" }
        if mime.hasPrefix("text/") || mime == "application/json" { return "page_white_text" }
        if mime == "application/zip" { return "page_white_compressed" }
        if mime.hasPrefix("video/") { return "page_white_film" }
        if mime.hasPrefix("audio/") { return "page_white_sound" }
        return "page_white"
    }
}
