import CVips
public import Foundation

/// What a share extension says about an image without decoding it, as UIKit would say it:
/// its size as shown upright (what a `UIImage` reports), its orientation in
/// `UIImage.Orientation`'s numbering, its scale, its type and a line for people. The size
/// as stored and the EXIF orientation stay available under their own names.
///
/// ```swift
/// let details = try ImageDetails.read(fileAt: URL(fileURLWithPath: "cow.jpg"))
/// print(details.width, details.height, details.orientation)   // 480 640 right: as UIImage says
/// print(details.orientation.rawValue)                         // 3: UIImage.Orientation.right
/// print(details.pixelWidth, details.pixelHeight)              // 640 480: as stored
/// print(details.exifOrientation)                              // 6
/// print(details)   // JPEG image, 480 × 640, shown rotated 90° (stored 640 × 480; EXIF 6, UIKit right)
/// ```
///
/// ``read(fileAt:)`` reads the header only (libvips with sequential access, pixels never
/// asked for), so a 12000 × 12000 photo costs what a thumbnail does. It reads JPEG, PNG,
/// GIF, WebP, TIFF and whatever else the system's libvips can load (HEIC with libheif).
public struct ImageDetails: Sendable, Hashable, CustomStringConvertible {
    /// Pixels across as stored, before the orientation is applied (EXIF's and libvips' width).
    public var pixelWidth: Int
    /// Pixels down as stored; for an animated image, one frame's.
    public var pixelHeight: Int
    /// How the stored pixels are turned to be shown upright, in UIKit's terms
    /// (`UIImage.imageOrientation`); ``ImageOrientation/up`` when the file says nothing.
    public var orientation: ImageOrientation
    /// Pixels per point: 1.0, or N for a file whose name ends in `@Nx` before the extension
    /// (`icon@2x.png` is 2.0), UIKit's rule for image files. Resolution fields (DPI) are
    /// not used: cameras write 72, 300 or 350 there whatever the picture is.
    public var scale: Double
    /// What the bytes say the image is (`public.jpeg`), from ``TypeIdentifier/detect(fileAt:)``.
    public var typeIdentifier: TypeIdentifier
    /// Frames in an animated GIF or WebP, pages in a TIFF; 1 for a still image.
    public var pageCount: Int

    /// Details of an image stored `pixelWidth` × `pixelHeight` and shown turned by `orientation`.
    ///
    /// ```swift
    /// let details = ImageDetails(pixelWidth: 640, pixelHeight: 480, orientation: .right, typeIdentifier: .jpeg)
    /// details.width   // 480
    /// ```
    public init(
        pixelWidth: Int, pixelHeight: Int, orientation: ImageOrientation = .up, scale: Double = 1,
        typeIdentifier: TypeIdentifier, pageCount: Int = 1
    ) {
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.orientation = orientation
        self.scale = scale
        self.typeIdentifier = typeIdentifier
        self.pageCount = pageCount
    }

    /// Pixels across as shown upright: ``pixelHeight`` when the orientation turns the image
    /// a quarter (left, right and their mirrors; EXIF 5–8), else ``pixelWidth``. What
    /// `UIImage.size.width` reports for a scale of 1; UIKit divides by ``scale`` for `@2x` files.
    public var width: Int { orientation.swapsSides ? pixelHeight : pixelWidth }

    /// Pixels down as shown upright: ``pixelWidth`` for EXIF 5–8, else ``pixelHeight``.
    public var height: Int { orientation.swapsSides ? pixelWidth : pixelHeight }

    /// The orientation as the file's EXIF tag writes it, 1–8 (6: shown rotated 90° clockwise).
    public var exifOrientation: Int { orientation.exifOrientation }

    /// A line for people: the size as shown, then for a turned image how it is shown, the
    /// size as stored when it differs, the EXIF value and UIKit's name:
    /// `JPEG image, 480 × 640, shown rotated 90° (stored 640 × 480; EXIF 6, UIKit right)`;
    /// then `@2x` for a scale other than 1 and `, 12 frames` for an animation.
    public var description: String {
        var line = "\(Self.kindName(typeIdentifier)) image, \(width) × \(height)"
        if orientation != .up {
            let stored = orientation.swapsSides ? "stored \(pixelWidth) × \(pixelHeight); " : ""
            line += ", shown \(orientation.phrase) (\(stored)EXIF \(exifOrientation), UIKit \(orientation))"
        }
        if scale != 1 { line += " @\(scale.rounded() == scale ? String(Int(scale)) : String(scale))x" }
        if pageCount > 1 { line += ", \(pageCount) \(typeIdentifier == .tiff ? "pages" : "frames")" }
        return line
    }

    /// Reads the details of the image file at `url` from its header, never decoding the
    /// pixels. Throws ``ShareKitError``: `.fileNotFound` or `.unreadable` naming the file,
    /// `.notAnImage` when libmagic says the bytes are not an image or libvips cannot read
    /// them.
    public static func read(fileAt url: URL) throws -> ImageDetails {
        let path = url.path
        let type = try TypeIdentifier.detect(fileAt: url)
        guard type.conforms(to: .image) else {
            // Checked before libvips, which would read a CSV or a matrix text file as an image.
            throw ShareKitError("\(path) is not an image: its content is \(type.rawValue)", code: .notAnImage, path: path)
        }
        try startVips()
        var width: Int32 = 0, height: Int32 = 0, orientation: Int32 = 1, pages: Int32 = 1
        var loader = [CChar](repeating: 0, count: 64)
        var message = [CChar](repeating: 0, count: 512)
        let status = cvips_header_file(path, &width, &height, &orientation, &pages, &loader, loader.count, &message, message.count)
        guard status == 0 else {
            let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw ShareKitError(
                "libvips cannot read the \(type.rawValue) image \(path): \(reason.isEmpty ? "unknown error" : reason)",
                code: .notAnImage, path: path)
        }
        return ImageDetails(
            pixelWidth: Int(width), pixelHeight: Int(height), orientation: ImageOrientation(exifOrientation: Int(orientation)) ?? .up,
            scale: scale(fromFilename: url.lastPathComponent), typeIdentifier: type, pageCount: max(1, Int(pages)))
    }

    /// The `@Nx` rule of ``scale``: N from 1 to 10 just before the extension, else 1.
    static func scale(fromFilename name: String) -> Double {
        let stem = (name as NSString).deletingPathExtension
        guard stem.hasSuffix("x"), let at = stem.lastIndex(of: "@") else { return 1 }
        let digits = stem[stem.index(after: at)..<stem.index(before: stem.endIndex)]
        guard let factor = Int(digits), (1...10).contains(factor) else { return 1 }
        return Double(factor)
    }

    /// The word for the format in ``description``.
    static func kindName(_ type: TypeIdentifier) -> String {
        let names: [TypeIdentifier: String] = [
            .jpeg: "JPEG", .png: "PNG", .gif: "GIF", .webP: "WebP", .heic: "HEIC", .heif: "HEIF",
            .tiff: "TIFF", .bmp: "BMP", .ico: "ICO", .svg: "SVG",
        ]
        if let name = names[type] { return name }
        return type.preferredFilenameExtension?.uppercased() ?? type.preferredMIMEType ?? type.rawValue
    }

    /// libvips starts once per process; the result is kept so that every call reports a failure.
    private static let vipsStarted: Bool = cvips_start_as("ferry-sharekit") == 0

    private static func startVips() throws {
        guard vipsStarted else {
            throw ShareKitError("libvips cannot start: \(String(cString: cvips_load_error())) (scripts/install-deps installs it)", code: .library)
        }
    }
}
