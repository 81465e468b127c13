// Real files for the ShareKit tests, made at test time: images by ImageMagick's `convert`
// (scripts/install-deps installs it), the rest written byte by byte.
import FerryTestSupport
import Foundation
import Testing

/// A fresh folder per test, removed by `remove()`.
struct Scratch {
    let root: URL

    init() throws {
        root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sharekit-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    func url(_ name: String) -> URL { root.appendingPathComponent(name) }

    @discardableResult
    func write(_ data: Data, to name: String) throws -> URL {
        let url = url(name)
        try data.write(to: url)
        return url
    }

    @discardableResult
    func write(_ text: String, to name: String) throws -> URL { try write(Data(text.utf8), to: name) }

    /// Runs ImageMagick's `convert` with `arguments` (file names relative to the folder) and
    /// returns the URL of the last argument, the file it wrote.
    @discardableResult
    func convert(_ arguments: String...) async throws -> URL {
        try await TestImages.convert(arguments, in: root)
        return url(arguments.last!)
    }

    /// A JPEG of `width` × `height` with an EXIF orientation of `orientation` (1–8).
    @discardableResult
    func orientedJPEG(_ name: String, width: Int, height: Int, orientation: Int) async throws -> URL {
        try await TestImages.orientedJPEG(at: url(name), width: width, height: height, orientation: orientation)
        return url(name)
    }

    func remove() {
        _ = try? FileManager.default.removeItem(at: root)
    }
}

/// Hand-written files libmagic recognises from their first bytes.
enum Samples {
    /// An ISO base media file: an `ftyp` box naming the brand, then an empty `mdat` box.
    static func isoMedia(brand: String) -> Data {
        var bytes: [UInt8] = [0, 0, 0, 24] + Array("ftyp".utf8) + Array(brand.utf8) + [0, 0, 0, 0]
        bytes += Array(brand.utf8) + Array("isom".utf8)
        bytes += [0, 0, 0, 8] + Array("mdat".utf8)
        return Data(bytes)
    }

    /// A one-page PDF with no content.
    static let pdf = Data("""
        %PDF-1.4
        1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
        2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj
        3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >> endobj
        trailer << /Root 1 0 R >>
        %%EOF

        """.utf8)
}

extension Samples {
    /// A valid baseline JPEG of `width` × `height` (multiples of 8), three components, every
    /// block flat grey. Made by hand because ImageMagick needs gigabytes to make a large one:
    /// each Huffman table holds a single one-bit code (DC difference 0, end of block), so
    /// the scan is two zero bits per block and the file stays small whatever its size.
    ///
    /// `undecodable` marks the frame progressive (SOF2), which makes the scan invalid for a
    /// progressive decoder (a first scan of all 64 coefficients): the header still reads,
    /// but any decode fails ("Invalid progressive parameters"). A tripwire for decoding.
    static func flatJPEG(width: Int, height: Int, undecodable: Bool = false) -> Data {
        precondition(width % 8 == 0 && height % 8 == 0 && width <= 65535 && height <= 65535)
        func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
        var bytes: [UInt8] = [0xFF, 0xD8]  // SOI
        bytes += [0xFF, 0xDB] + be16(67) + [0x00] + [UInt8](repeating: 1, count: 64)  // DQT 0, all ones
        bytes += [0xFF, undecodable ? 0xC2 : 0xC0] + be16(17) + [8] + be16(height) + be16(width) + [3]  // SOF0 (or SOF2), 8-bit, 3 components
        bytes += [1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0]  // Y, Cb, Cr: 1×1 sampling, table 0
        let oneCode: [UInt8] = [1] + [UInt8](repeating: 0, count: 15) + [0x00]  // one code of length 1: symbol 0
        bytes += [0xFF, 0xC4] + be16(20) + [0x00] + oneCode  // DHT DC 0: "0" = difference 0
        bytes += [0xFF, 0xC4] + be16(20) + [0x10] + oneCode  // DHT AC 0: "0" = end of block
        bytes += [0xFF, 0xDA] + be16(12) + [3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0]  // SOS
        let blocks = (width / 8) * (height / 8) * 3
        bytes += [UInt8](repeating: 0, count: (blocks * 2 + 7) / 8)
        bytes += [0xFF, 0xD9]  // EOI
        return Data(bytes)
    }
}
