public import Foundation

/// Images for tests, written at test time by ImageMagick's `convert` (scripts/install-deps).
public enum TestImages {
    /// Writes a JPEG of `width` × `height` (stored pixels) whose EXIF orientation is
    /// `orientation` (1–8). ImageMagick 6 writes no orientation into a JPEG that has no EXIF
    /// block, so the image gets a minimal one first, then `-orient` sets the tag.
    ///
    /// ```swift
    /// try await TestImages.orientedJPEG(at: cow, width: 640, height: 480, orientation: 6)  // shown rotated 90°
    /// ```
    public static func orientedJPEG(at url: URL, width: Int, height: Int, orientation: Int) async throws {
        let names = ["", "TopLeft", "TopRight", "BottomRight", "BottomLeft", "LeftTop", "RightTop", "RightBottom", "LeftBottom"]
        precondition((1...8).contains(orientation), "EXIF orientations are 1–8")
        // ImageMagick tells the profile's kind by its file name: it must be `exif.app1`.
        let scratch = url.deletingLastPathComponent().appendingPathComponent(".exif-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let profile = scratch.appendingPathComponent("exif.app1")
        try exifWithOrientationOne.write(to: profile)
        let plain = scratch.appendingPathComponent("plain.jpg")
        try await convert(["-size", "\(width)x\(height)", "gradient:sienna-khaki", "-profile", profile.path, plain.path])
        try await convert([plain.path, "-orient", names[orientation], url.path])
    }

    /// Runs `convert` with `arguments` (relative names from `directory`); throws with its
    /// message when it fails. Its errors go through a file, not a pipe: a pipe's write end can
    /// leak into a process another test starts at the same moment (a server that lives on),
    /// and reading to the pipe's end would then wait forever. Awaited (`runToExit`), not
    /// waited for on a thread.
    public static func convert(_ arguments: [String], in directory: URL? = nil) async throws {
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("convert-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        let process = Process()
        // Not through `env`: a program that execs another keeps Foundation's one monitoring
        // thread waiting for it (see SpawnedProcess).
        process.executableURL = URL(fileURLWithPath: "/usr/bin/convert")
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.standardError = try FileHandle(forWritingTo: errors)
        guard try await process.runToExit() == 0 else {
            let message = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw TestImageError(description: "convert \(arguments.joined(separator: " ")): \(message)")
        }
    }

    /// An APP1 EXIF block holding one tag, Orientation = 1 (big-endian TIFF, one IFD).
    public static let exifWithOrientationOne = Data(
        Array("Exif".utf8) + [0, 0]
            + [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08]  // "MM", 42, first IFD at 8
            + [0x00, 0x01]  // one entry
            + [0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]  // Orientation, SHORT, 1
            + [0x00, 0x00, 0x00, 0x00])  // no next IFD
}

public struct TestImageError: Error, CustomStringConvertible {
    public var description: String
}
