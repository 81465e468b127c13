import ArgumentParser
import ByteClubKit
import Foundation

struct Photos: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The club's photos: list them with thumbnails, upload, download.",
        subcommands: [List.self, Upload.self, Get.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the photos (name, size, modified); thumbnails are downloaded into the cache, several at once.")
        @Flag(help: "Print JSON, each photo with its cached thumbnail's path.") var json = false
        @Flag(name: .customLong("no-thumbnails"), help: "Do not fetch thumbnails.") var noThumbnails = false
        @Option(help: "Show thumbnails inline: auto (what the terminal speaks), kitty, sixel, none.") var images = "auto"
        @Option(help: "Write a contact sheet of the thumbnails to this file (.jpg, .png).") var sheet: String?

        func validate() throws {
            guard images == "auto" || images == "none" || InlineImages(rawValue: images) != nil else {
                throw ValidationError("--images is auto, kitty, sixel or none")
            }
            if noThumbnails && sheet != nil { throw ValidationError("--sheet needs the thumbnails") }
        }

        func run() async throws {
            let club = try signedInClub()
            var photos = try await club.photos()
            var fetched = 0
            if !noThumbnails { (photos, fetched) = await club.withThumbnails(photos) }
            if !noThumbnails {
                say(error: "\(fetched) thumbnail(s) downloaded, \(photos.filter { $0.thumbnail != nil }.count - fetched) from the cache")
            }
            if let sheet {
                let pictures = photos.compactMap { photo in photo.thumbnail.map { (file: $0, label: photo.name) } }
                do { try ContactSheet.write(pictures, to: URL(fileURLWithPath: sheet)) } catch { throw ByteClubError.local("\(error)") }
                say(error: "contact sheet of \(pictures.count) photo(s) written to \(sheet)")
            }
            if json { return try printJSON(photos.map(PhotoListing.init)) }
            if photos.isEmpty { return print("no photos yet: upload one with `byteclub photos upload FILE`") }
            let rows = photos.map { photo in
                [photo.name, ProgressBar.bytes(photo.metadata.bytes), photo.metadata.modified.map(listingDate) ?? "-",
                 photo.metadata.modifier?.displayName ?? "-"]
            }
            let inline = noThumbnails || images == "none" ? nil : (images == "auto" ? InlineImages.detect() : InlineImages(rawValue: images))
            guard let inline else { return printColumns(rows) }
            // Each row under its picture (at most 128 × 96 pixels).
            for (photo, row) in zip(photos, columns(rows)) {
                if let picture = photo.thumbnail.flatMap({ inline.sequence(for: $0, width: 128, height: 96) }) {
                    FileHandle.standardOutput.write(Data(picture.utf8))
                }
                print(row)
            }
        }
    }

    struct Upload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upload photos with a progress bar; Ctrl-C cancels and the server keeps nothing of it.",
            discussion: "With --background ferryd carries the uploads and starts byteclub when they end; `byteclub history` shows how.")
        @Argument(help: "JPEG files.") var files: [String]
        @Flag(help: "Hand the uploads to ferryd and return at once.") var background = false

        func run() async throws {
            let club = try signedInClub()
            if background {
                for (file, task) in try BackgroundUploads.start(files.map { URL(fileURLWithPath: $0) }, club: club) {
                    print("handed \(file.lastPathComponent) to ferryd (task #\(task)); `byteclub history` tells how it ends")
                }
                return
            }
            for path in files {
                let file = URL(fileURLWithPath: path)
                let bar = ProgressBar(file.lastPathComponent)
                do {
                    let stored = try await Interrupt.cancelling { try await club.uploadPhoto(file, progress: bar.update) }
                    bar.finish()
                    print("uploaded \(file.lastPathComponent) as \(stored.name) (\(stored.bytes) bytes)")
                } catch {
                    bar.finish()
                    throw error
                }
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download a photo with a progress bar; Ctrl-C keeps resume data and running it again continues.")
        @Argument(help: "The photo's name.") var name: String
        @Option(name: .shortAndLong, help: "Where to put it (default: its name in the current folder).") var output: String?

        func run() async throws {
            let club = try signedInClub()
            let destination = URL(fileURLWithPath: output ?? name)
            let bar = ProgressBar(name)
            do {
                let got = try await Interrupt.cancelling { try await club.downloadPhoto(named: name, to: destination, progress: bar.update) }
                bar.finish()
                let how = got.resumedAt.map { "continued from byte \($0) (206)" } ?? "whole"
                print("downloaded \(name) to \(got.file.path) (\(got.bytes) bytes, \(how))")
            } catch ByteClubError.cancelled {
                bar.finish()
                say(error: "stopped; run the same command again to continue where it stopped")
                throw ByteClubError.cancelled
            }
        }
    }
}

/// A photo in `photos --json`.
struct PhotoListing: Encodable {
    var name: String
    var path: String
    var bytes: Int64
    var rev: String?
    var modified: Date?
    var author: String?
    var thumbnail: String?

    init(_ photo: Photo) {
        name = photo.name
        path = photo.metadata.path
        bytes = photo.metadata.bytes
        rev = photo.metadata.rev
        modified = photo.metadata.modified
        author = photo.metadata.modifier?.displayName
        thumbnail = photo.thumbnail?.path
    }
}
