import CVips
import Foundation
import ShareKit
import Testing

@Suite("Image details from the header")
struct ImageDetailsTests {
    @Test("Sizes of JPEG, PNG, GIF and WebP files written by ImageMagick")
    func sizes() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cases: [(String, TypeIdentifier, String)] = [
            ("a.jpg", .jpeg, "JPEG"), ("a.png", .png, "PNG"), ("a.gif", .gif, "GIF"), ("a.webp", .webP, "WebP"),
        ]
        for (index, (name, type, kind)) in cases.enumerated() {
            let (width, height) = (40 + index, 30 + 2 * index)
            let details = try ImageDetails.read(fileAt: scratch.convert("-size", "\(width)x\(height)", "xc:red", name))
            #expect(details.width == width, "\(name)")
            #expect(details.height == height, "\(name)")
            #expect(details.orientation == 1, "\(name)")
            #expect(details.orientedWidth == width && details.orientedHeight == height, "\(name)")
            #expect(details.scale == 1, "\(name)")
            #expect(details.pageCount == 1, "\(name)")
            #expect(details.typeIdentifier == type, "\(name)")
            #expect(details.description == "\(kind) image, \(width) × \(height)")
        }
    }

    @Test("EXIF orientations 1–8 written by ImageMagick; sides swap for 5–8", arguments: 1...8)
    func orientation(_ orientation: Int) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let details = try ImageDetails.read(fileAt: scratch.orientedJPEG("o.jpg", width: 40, height: 30, orientation: orientation))
        #expect(details.orientation == orientation)
        #expect(details.width == 40 && details.height == 30)
        let swapped = orientation >= 5
        #expect(details.orientedWidth == (swapped ? 30 : 40))
        #expect(details.orientedHeight == (swapped ? 40 : 30))
        #expect(details.swapsSides == swapped)
    }

    @Test("The description names the turn")
    func description() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let six = try ImageDetails.read(fileAt: scratch.orientedJPEG("six.jpg", width: 640, height: 480, orientation: 6))
        #expect(six.description == "JPEG image, 640 × 480, rotated 90° (EXIF 6)")
        let three = try ImageDetails.read(fileAt: scratch.orientedJPEG("three.jpg", width: 16, height: 8, orientation: 3))
        #expect(three.description == "JPEG image, 16 × 8, rotated 180° (EXIF 3)")
        #expect(ImageDetails(width: 2, height: 1, orientation: 8, typeIdentifier: .png).description == "PNG image, 2 × 1, rotated 270° (EXIF 8)")
    }

    @Test("Scale comes from an @Nx name, else 1")
    func scale() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let two = try ImageDetails.read(fileAt: scratch.convert("-size", "20x10", "xc:red", "icon@2x.png"))
        #expect(two.scale == 2)
        #expect(two.width == 20)
        #expect(two.description == "PNG image, 20 × 10 @2x")
        #expect(try ImageDetails.read(fileAt: scratch.convert("-size", "20x10", "xc:red", "icon@3x.jpg")).scale == 3)
        #expect(try ImageDetails.read(fileAt: scratch.convert("-size", "20x10", "xc:red", "me@home.png")).scale == 1)
        #expect(try ImageDetails.read(fileAt: scratch.convert("-size", "20x10", "xc:red", "x@99x.png")).scale == 1)
    }

    @Test("An animated GIF: one frame's size and the frame count")
    func animation() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let url = try scratch.convert("-delay", "10", "-size", "20x10", "xc:red", "xc:blue", "xc:green", "anim.gif")
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
    func handMadeJPEGDecodes() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.write(Samples.flatJPEG(width: 64, height: 48), to: "flat.jpg")
        let png = try scratch.convert("flat.jpg", "flat.png")
        let details = try ImageDetails.read(fileAt: png)
        #expect(details.width == 64 && details.height == 48)
        #expect(details.typeIdentifier == .png)
    }
}
