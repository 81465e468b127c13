import CVips
import Foundation
import Synchronization

/// libvips (Debian's libvips) for what the server needs of images: their size, read from the
/// file's header, and thumbnails, decoded and shrunk by the library.
enum Vips {
    private static let started = Mutex<Bool?>(nil)

    /// Starts libvips once; false if it cannot start (then images get no dimensions).
    static func start() -> Bool {
        started.withLock { state in
            if let state { return state }
            let ok = cvips_start() == 0
            state = ok
            return ok
        }
    }

    /// Width and height of the image file at `path`, or nil if libvips cannot read it.
    static func dimensions(path: String) -> (width: Int, height: Int)? {
        guard start() else { return nil }
        var width: Int32 = 0
        var height: Int32 = 0
        guard cvips_dimensions_file(path, &width, &height) == 0 else { return nil }
        return (Int(width), Int(height))
    }

    /// A thumbnail of the image at `path` fitting `width`×`height` (or filling it, cropped
    /// around the centre, when `cropped`), encoded as JPEG or PNG.
    static func thumbnail(path: String, width: Int, height: Int, png: Bool, cropped: Bool = false) -> [UInt8]? {
        guard start() else { return nil }
        var buffer: UnsafeMutableRawPointer? = nil
        var length = 0
        let made = cropped
            ? cvips_thumbnail_file_cropped(path, Int32(width), Int32(height), png ? ".png" : ".jpg", &buffer, &length)
            : cvips_thumbnail_file(path, Int32(width), Int32(height), png ? ".png" : ".jpg", &buffer, &length)
        guard made == 0, let buffer else { return nil }
        defer { cvips_free(buffer) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: length))
    }
}
