import CVips
import Foundation
import ShareKit
import Testing

@Suite("Image details from the header")
struct ImageDetailsTests {
    @Test("Sizes of JPEG, PNG, GIF and WebP files written by ImageMagick")
    func sizes() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cases: [(String, TypeIdentifier, String)] = [
            ("a.jpg", .jpeg, "JPEG"), ("a.png", .png, "PNG"), ("a.gif", .gif, "GIF"), ("a.webp", .webP, "WebP"),
        ]
        for (index, (name, type, kind)) in cases.enumerated() {
            let (width, height) = (40 + index, 30 + 2 * index)
            let details = try await ImageDetails.read(fileAt: scratch.convert("-size", "\(width)x\(height)", "xc:red", name))
            #expect(details.width == width, "\(name)")
            #expect(details.height == height, "\(name)")
            #expect(details.orientation == .up && details.exifOrientation == 1, "\(name)")
            #expect(details.pixelWidth == width && details.pixelHeight == height, "\(name)")
            #expect(details.scale == 1, "\(name)")
            #expect(details.pageCount == 1, "\(name)")
            #expect(details.typeIdentifier == type, "\(name)")
            #expect(details.description == "\(kind) image, \(width) × \(height)")
        }
    }

    /// EXIF value, UIKit's case and raw value: the table of UIImage.Orientation's documentation.
    static let orientations: [(Int, ImageOrientation, Int)] = [
        (1, .up, 0), (2, .upMirrored, 4), (3, .down, 1), (4, .downMirrored, 5),
        (5, .leftMirrored, 6), (6, .right, 3), (7, .rightMirrored, 7), (8, .left, 2),
    ]

    @Test("Real JPEGs with EXIF orientations 1–8: UIKit's numbering, and width/height as shown (swapped for 5–8)",
          arguments: orientations)
    func orientation(_ exif: Int, _ uikit: ImageOrientation, _ rawValue: Int) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let details = try await ImageDetails.read(fileAt: scratch.orientedJPEG("o.jpg", width: 40, height: 30, orientation: exif))
        #expect(details.exifOrientation == exif)
        #expect(details.orientation == uikit)
        #expect(details.orientation.rawValue == rawValue)
        #expect(details.pixelWidth == 40 && details.pixelHeight == 30)
        let swapped = exif >= 5
        #expect(details.orientation.swapsSides == swapped)
        #expect(details.width == (swapped ? 30 : 40))
        #expect(details.height == (swapped ? 40 : 30))
        #expect(details.orientation.isMirrored == [2, 4, 5, 7].contains(exif))
    }

    @Test("EXIF and UIKit numbers translate both ways; nothing outside 1–8")
    func orientationNumbers() {
        for (exif, uikit, rawValue) in Self.orientations {
            #expect(ImageOrientation(exifOrientation: exif) == uikit)
            #expect(ImageOrientation(rawValue: rawValue) == uikit)
            #expect(uikit.exifOrientation == exif)
        }
        #expect(Set(Self.orientations.map(\.1)) == Set(ImageOrientation.allCases))
        #expect(ImageOrientation(exifOrientation: 0) == nil && ImageOrientation(exifOrientation: 9) == nil)
        #expect(ImageOrientation(rawValue: 8) == nil)
        #expect(ImageOrientation.rightMirrored.description == "rightMirrored")
    }

    @Test("The description gives the size as shown, then the turn, the stored size, EXIF and UIKit's name")
    func description() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let six = try await ImageDetails.read(fileAt: scratch.orientedJPEG("six.jpg", width: 640, height: 480, orientation: 6))
        #expect(six.description == "JPEG image, 480 × 640, shown rotated 90° (stored 640 × 480; EXIF 6, UIKit right)")
        let three = try await ImageDetails.read(fileAt: scratch.orientedJPEG("three.jpg", width: 16, height: 8, orientation: 3))
        #expect(three.description == "JPEG image, 16 × 8, shown rotated 180° (EXIF 3, UIKit down)")
        #expect(ImageDetails(pixelWidth: 2, pixelHeight: 1, orientation: .left, typeIdentifier: .png).description
                == "PNG image, 1 × 2, shown rotated 270° (stored 2 × 1; EXIF 8, UIKit left)")
    }

    @Test("Scale comes from an @Nx name, else 1")
    func scale() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let two = try await ImageDetails.read(fileAt: scratch.convert("-size", "20x10", "xc:red", "icon@2x.png"))
        #expect(two.scale == 2)
        #expect(two.width == 20)
        #expect(two.description == "PNG image, 20 × 10 @2x")
        #expect(try await ImageDetails.read(fileAt: scratch.convert("-size", "20x10", "xc:red", "icon@3x.jpg")).scale == 3)
        #expect(try await ImageDetails.read(fileAt: scratch.convert("-size", "20x10", "xc:red", "me@home.png")).scale == 1)
        #expect(try await ImageDetails.read(fileAt: scratch.convert("-size", "20x10", "xc:red", "x@99x.png")).scale == 1)
    }

    @Test("An animated GIF: one frame's size and the frame count")
    func animation() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let url = try await scratch.convert("-delay", "10", "-size", "20x10", "xc:red", "xc:blue", "xc:green", "anim.gif")
        let details = try ImageDetails.read(fileAt: url)
        #expect(details.width == 20 && details.height == 10)
        #expect(details.pageCount == 3)
        #expect(details.description == "GIF image, 20 × 10, 3 frames")
    }

    @Test("Not an image, a broken image, a missing file: clear errors naming the file")
    func errors() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let text = try scratch.write("a,b\n1,2\n", to: "table.jpg")
        let notImage = try #require(throws: ShareKitError.self) { try ImageDetails.read(fileAt: text) }
        #expect(notImage.code == .notAnImage)
        #expect(notImage.description == "\(text.path) is not an image: its content is public.plain-text")

        let broken = try scratch.write(Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]) + Data("JFIF".utf8) + Data(count: 20), to: "broken.jpg")
        let unreadable = try #require(throws: ShareKitError.self) { try ImageDetails.read(fileAt: broken) }
        #expect(unreadable.code == .notAnImage)
        #expect(unreadable.description.hasPrefix("libvips cannot read the public.jpeg image \(broken.path): "))

        let missing = try #require(throws: ShareKitError.self) { try ImageDetails.read(fileAt: scratch.url("gone.png")) }
        #expect(missing.code == .fileNotFound)
        #expect(missing.path == scratch.url("gone.png").path)
    }

    /// A 12000 × 12000 JPEG holds 432 MB of pixels. The proof that reading its details
    /// decodes none of them is a tripwire rather than a clock or a process-wide counter
    /// (other suites run libvips in this process at the same time): the same header over a
    /// scan no decoder accepts. Its details read; decoding it fails, so the read decoded nothing.
    @Test("A 12000 × 12000 JPEG's details are read from the header, never decoding the pixels")
    func headerOnly() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let big = try scratch.write(Samples.flatJPEG(width: 12000, height: 12000), to: "big.jpg")
        let details = try ImageDetails.read(fileAt: big)
        #expect(details.width == 12000 && details.height == 12000)
        #expect(details.typeIdentifier == .jpeg)
        #expect(details.description == "JPEG image, 12000 × 12000")

        let trap = try scratch.write(Samples.flatJPEG(width: 12000, height: 12000, undecodable: true), to: "trap.jpg")
        let trapped = try ImageDetails.read(fileAt: trap)
        #expect(trapped.width == 12000 && trapped.height == 12000)
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        #expect(cvips_thumbnail_file(trap.path, 64, 64, ".jpg", &buffer, &length) != 0, "the trap decoded")
        cvips_free(buffer)
    }

    @Test("The hand-made JPEG is a real one: ImageMagick decodes it")
    func handMadeJPEGDecodes() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.write(Samples.flatJPEG(width: 64, height: 48), to: "flat.jpg")
        let png = try await scratch.convert("flat.jpg", "flat.png")
        let details = try ImageDetails.read(fileAt: png)
        #expect(details.width == 64 && details.height == 48)
        #expect(details.typeIdentifier == .png)
    }
}
