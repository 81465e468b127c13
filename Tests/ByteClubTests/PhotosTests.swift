import ByteClubKit
import FerryTestSupport
import Foundation
import Testing

/// `byteclub photos …` against a real byteclub-server: listing with thumbnails, uploads with a
/// progress bar, Ctrl-C on an upload and on a download.
@Suite("byteclub photos")
struct PhotosTests {
    @Test("uploaded photos are listed with thumbnails fetched once: a second listing downloads nothing")
    func listWithThumbnails() async throws {
        try await ClubFixture.with { club in
            for (index, name) in ["alps.jpg", "beach.jpg", "city.jpg"].enumerated() {
                try await TestImages.convert(["-size", "\(320 + index * 10)x240", "gradient:navy-gold", club.file(name).path])
            }
            let upload = try await club.run(["photos", "upload", "alps.jpg", "beach.jpg", "city.jpg"])
            #expect(upload.status == 0, "\(upload.output)")
            #expect(upload.output.contains("uploaded beach.jpg as beach.jpg"), "\(upload.output)")
            #expect(upload.output.contains("/ "), "a progress bar was drawn: \(upload.output)")

            let first = try await club.run(["photos", "--json"], member: "reader")
            let photos = try Self.json(first.output)
            #expect(photos.compactMap { $0["name"] as? String } == ["alps.jpg", "beach.jpg", "city.jpg"], "\(first.output)")
            for photo in photos {
                let thumbnail = try #require(photo["thumbnail"] as? String, "each photo has a cached thumbnail: \(photo)")
                let bytes = try Data(contentsOf: URL(fileURLWithPath: thumbnail))
                #expect(bytes.starts(with: [0xFF, 0xD8]), "the thumbnail is a JPEG")
            }
            #expect(first.output.contains("3 thumbnail(s) downloaded, 0 from the cache"), "\(first.output)")
            let second = try await club.run(["photos"], member: "reader")
            #expect(second.output.contains("0 thumbnail(s) downloaded, 3 from the cache"), "\(second.output)")
            #expect(second.output.contains("beach.jpg"))
        }
    }

    @Test("two members: one uploads a 20 MB photo with a progress bar, the other sees its thumbnail")
    func bigPhotoBetweenMembers() async throws {
        try await ClubFixture.with { club in
            let alice = try await club.addMember("alice")
            let bob = try await club.addMember("bob")
            let photo = club.file("harbour.jpg", member: "alice")
            try await TestImages.convert(["-size", "5200x3900", "xc:gray", "+noise", "Random", "-quality", "100", photo.path])
            let size = try FileManager.default.attributesOfItem(atPath: photo.path)[.size] as? Int ?? 0
            #expect(size > 20_000_000, "a 20 MB photo (\(size) bytes)")
            let upload = try await club.run(["photos", "upload", "harbour.jpg"], member: "alice", environment: ["BYTECLUB_ACCESS_TOKEN": alice])
            #expect(upload.status == 0 && upload.output.contains("uploaded harbour.jpg as harbour.jpg"), "\(upload.output.suffix(500))")
            #expect(upload.output.contains("/ \(ProgressBarText.mebibytes(size))"), "the progress bar showed the size")

            let listed = try await club.run(["photos", "--json"], member: "bob", environment: ["BYTECLUB_ACCESS_TOKEN": bob])
            let photos = try Self.json(listed.output)
            let entry = try #require(photos.first { $0["name"] as? String == "harbour.jpg" }, "\(listed.output)")
            #expect(entry["author"] as? String == "alice")
            let thumbnail = try #require(entry["thumbnail"] as? String)
            #expect(try Data(contentsOf: URL(fileURLWithPath: thumbnail)).starts(with: [0xFF, 0xD8]), "bob has its thumbnail")
        }
    }

    @Test("thumbnails are drawn inline with the kitty protocol or sixel, and --sheet writes a contact sheet with libvips")
    func inlineAndSheet() async throws {
        try await ClubFixture.with { club in
            try await TestImages.convert(["-size", "400x300", "gradient:white-navy", club.file("sky.jpg").path])
            try await TestImages.convert(["-size", "300x400", "gradient:green-yellow", club.file("tree.jpg").path])
            #expect(try await club.run(["photos", "upload", "sky.jpg", "tree.jpg"]).status == 0)

            let kitty = try await club.run(["photos", "--images", "kitty"])
            let chunks = kitty.output.components(separatedBy: "\u{1B}_G").dropFirst()
            let first = try #require(chunks.first, "kitty graphics commands: \(kitty.output.prefix(300))")
            #expect(first.hasPrefix("a=T,f=24,s=128,v=96,"), "sky.jpg fitted into 128 × 96: \(first.prefix(60))")
            // The payload of the first picture (up to the next `a=T`) is 128 × 96 RGB pixels.
            var payload = ""
            for chunk in chunks {
                if chunk.hasPrefix("a=T"), !payload.isEmpty { break }
                let body = chunk[chunk.index(after: chunk.firstIndex(of: ";")!)...]
                payload += body.prefix { $0 != "\u{1B}" }
            }
            #expect(Data(base64Encoded: payload)?.count == 128 * 96 * 3)

            let sixel = try await club.run(["photos", "--images", "sixel"])
            let images = sixel.output.components(separatedBy: "\u{1B}P0;1;0q").dropFirst()
            #expect(images.count == 2, "one sixel image per photo")
            #expect(images.first?.hasPrefix("\"1;1;128;96") == true, "raster attributes of sky.jpg")
            #expect(images.dropFirst().first?.hasPrefix("\"1;1;72;96") == true, "tree.jpg fitted into 128 × 96 keeps its shape")
            let bands = images.first.map { $0.prefix { $0 != "\u{1B}" }.filter { $0 == "-" }.count }
            #expect(bands == 16, "96 rows are 16 bands of six")

            let plain = try await club.run(["photos"])
            #expect(!plain.output.contains("\u{1B}"), "no pictures when standard output is not a terminal")

            let sheet = club.file("sheet.jpg")
            let made = try await club.run(["photos", "--sheet", sheet.path])
            #expect(made.status == 0 && made.output.contains("contact sheet of 2 photo(s)"), "\(made.output)")
            let bytes = try Data(contentsOf: sheet)
            #expect(bytes.starts(with: [0xFF, 0xD8]), "the sheet is a JPEG")
        }
    }

    @Test("Ctrl-C on an upload stops it with status 130 and the server keeps nothing of it")
    func cancelledUpload() async throws {
        try await ClubFixture.with { club in
            let huge = club.file("huge.jpg")
            _ = FileManager.default.createFile(atPath: huge.path, contents: nil)
            try FileHandle(forWritingTo: huge).truncate(atOffset: 4 << 30)  // sparse: 4 GiB to read, none to store
            let upload = try club.start(["photos", "upload", "huge.jpg"])
            defer { upload.kill() }
            try await poll(until: "the upload's progress bar to show bytes sent", timeout: .seconds(30), observed: upload.output) {
                upload.output.contains("MiB / 4.0 GiB") || upload.output.contains("GiB / 4.0 GiB")
            }
            kill(upload.pid, SIGINT)
            let status = try await upload.exit(within: .seconds(15))
            #expect(status == 130, "Ctrl-C exits 130: \(upload.output)")
            #expect(upload.output.contains("cancelled"))
            let listed = try await club.run(["photos", "--json", "--no-thumbnails"])
            #expect(try Self.json(listed.output).isEmpty, "no partial photo is listed: \(listed.output)")
            let stored = try Self.storedBytes(club.root.appendingPathComponent("data"))
            #expect(stored < 1 << 20, "the server keeps no partial body (\(stored) bytes in its data folder)")
        }
    }

    @Test("Ctrl-C on a download keeps resume data; running it again continues with a 206 and the file is whole")
    func pausedDownload() async throws {
        // 4 MB/s: a 24 MB photo takes 6 s, long enough to stop it midway.
        try await ClubFixture.with(serverArguments: ["--fault-throttle", "4000000"]) { club in
            var generator = SystemRandomNumberGenerator()
            let original = Data((0..<(24 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let source = club.root.appendingPathComponent("panorama.jpg")
            try original.write(to: source)
            let me = ByteClub(account: ByteClubAccount(server: club.server, accessToken: ClubFixture.token))
            _ = try await me.uploadPhoto(source)

            let first = try club.start(["photos", "get", "panorama.jpg", "-o", "pano.jpg"])
            defer { first.kill() }
            try await poll(until: "the download's progress to pass 1 MiB", timeout: .seconds(30), observed: first.output) {
                first.output.contains("MiB / 24.0 MiB")
            }
            kill(first.pid, SIGINT)
            #expect(try await first.exit(within: .seconds(15)) == 130, "\(first.output)")
            #expect(first.output.contains("run the same command again to continue"), "\(first.output)")
            #expect(!FileManager.default.fileExists(atPath: club.file("pano.jpg").path), "nothing at the destination yet")

            let second = try await club.run(["photos", "get", "panorama.jpg", "-o", "pano.jpg"])
            #expect(second.status == 0, "\(second.output)")
            #expect(second.output.contains("continued from byte"), "the second run is a range request: \(second.output)")
            #expect(try Data(contentsOf: club.file("pano.jpg")) == original, "the file is whole and right")
        }
    }

    @Test("a thumbnail's cache file stays in the cache folder whatever path and rev the server sends")
    func thumbnailFileStaysInItsFolder() throws {
        let paths = ByteClubPaths(environment: ["HOME": "/tmp/byteclub-home", "XDG_CACHE_HOME": "/tmp/byteclub-cache"])
        let club = ByteClub(account: ByteClubAccount(server: URL(string: "http://127.0.0.1:9")!, accessToken: "t"), paths: paths)
        let metadata = try JSONDecoder().decode(FileMetadata.self, from: Data(#"{"path": "/byteclub/photos/../../a.jpg", "rev": "x/../../../evil"}"#.utf8))
        let file = club.thumbnailFile(for: Photo(metadata: metadata, thumbnail: nil))
        #expect(file.deletingLastPathComponent().path == "/tmp/byteclub-cache/byteclub/thumbnails", "\(file.path)")
        #expect(!file.lastPathComponent.contains("/"))
    }

    static func json(_ text: String) throws -> [[String: Any]] {
        let start = text.firstIndex(of: "[") ?? text.startIndex
        let end = text.lastIndex(of: "]").map { text.index(after: $0) } ?? text.endIndex
        return try JSONSerialization.jsonObject(with: Data(text[start..<end].utf8)) as? [[String: Any]] ?? []
    }

    /// Bytes in regular files under `folder` other than the database.
    static func storedBytes(_ folder: URL) throws -> Int64 {
        var total: Int64 = 0
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey])
        while let file = files?.nextObject() as? URL {
            guard !file.lastPathComponent.hasPrefix("byteclub.sqlite"), !file.pathExtension.hasSuffix("log") else { continue }
            total += Int64((try file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
        }
        return total
    }
}

/// How the progress bar writes a size in MiB (`20.3 MiB`).
enum ProgressBarText {
    static func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}
