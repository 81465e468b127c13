import CVips
public import Foundation

/// What a share extension says about an image without decoding it: its size in pixels as
/// stored, its EXIF orientation, its scale, its type and a line for people.
///
/// ```swift
/// let details = try ImageDetails.read(fileAt: URL(fileURLWithPath: "cow.jpg"))
/// print(details.width, details.height, details.orientation)   // 640 480 6
/// print(details.orientedWidth, details.orientedHeight)        // 480 640: as it is shown
/// print(details)   // JPEG image, 640 × 480, rotated 90° (EXIF 6)
/// ```
///
/// ``read(fileAt:)`` reads the header only (libvips with sequential access, pixels never
/// asked for), so a 12000 × 12000 photo costs what a thumbnail does. It reads JPEG, PNG,
/// GIF, WebP, TIFF and whatever else the system's libvips can load (HEIC with libheif).
public struct ImageDetails: Sendable, Hashable, CustomStringConvertible {
    /// Pixels across, as stored (before the orientation is applied).
    public var width: Int
    /// Pixels down, as stored; for an animated image, one frame's.
    public var height: Int
    /// The EXIF orientation, 1–8: how the stored pixels must be turned to be shown upright
    /// (6: rotate 90° clockwise). 1 when the image has none.
    public var orientation: Int
    /// Pixels per point: 1.0, or N for a file whose name ends in `@Nx` before the extension
    /// (`icon@2x.png` is 2.0), UIKit's rule for image files. Resolution fields (DPI) are
    /// not used: cameras write 72, 300 or 350 there whatever the picture is.
    public var scale: Double
    /// What the bytes say the image is (`public.jpeg`), from ``TypeIdentifier/detect(fileAt:)``.
    public var typeIdentifier: TypeIdentifier
    /// Frames in an animated GIF or WebP, pages in a TIFF; 1 for a still image.
    public var pageCount: Int

    public init(width: Int, height: Int, orientation: Int = 1, scale: Double = 1, typeIdentifier: TypeIdentifier, pageCount: Int = 1) {
        self.width = width
        self.height = height
        self.orientation = orientation
        self.scale = scale
        self.typeIdentifier = typeIdentifier
        self.pageCount = pageCount
    }

    /// Whether showing the image upright swaps its sides (orientations 5–8).
    public var swapsSides: Bool { (5...8).contains(orientation) }

    /// Pixels across once the orientation is applied: ``height`` for orientations 5–8.
    public var orientedWidth: Int { swapsSides ? height : width }

    /// Pixels down once the orientation is applied: ``width`` for orientations 5–8.
    public var orientedHeight: Int { swapsSides ? width : height }

    /// A line for people: `JPEG image, 640 × 480, rotated 90° (EXIF 6)`; then `@2x` for a
    /// scale other than 1 and `, 12 frames` for an animation.
    public var description: String {
        var line = "\(Self.kindName(typeIdentifier)) image, \(width) × \(height)"
        if let turn = Self.orientationPhrase(orientation) { line += ", \(turn) (EXIF \(orientation))" }
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
            width: Int(width), height: Int(height), orientation: (1...8).contains(orientation) ? Int(orientation) : 1,
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

    /// What showing the image upright does to the stored pixels; `nil` for orientation 1.
    static func orientationPhrase(_ orientation: Int) -> String? {
        switch orientation {
        case 2: "mirrored horizontally"
        case 3: "rotated 180°"
        case 4: "mirrored vertically"
        case 5: "mirrored horizontally and rotated 270°"
        case 6: "rotated 90°"
        case 7: "mirrored horizontally and rotated 90°"
        case 8: "rotated 270°"
        default: nil
        }
    }

    /// libvips starts once per process; the result is kept so that every call reports a failure.
    private static let vipsStarted: Bool = cvips_start_as("ferry-sharekit") == 0

    private static func startVips() throws {
        guard vipsStarted else {
            throw ShareKitError("libvips cannot start: \(String(cString: cvips_load_error())) (scripts/install-deps installs it)", code: .library)
        }
    }
}
