public import Foundation
import Ferry

extension ByteClub {
    /// How many thumbnails are fetched at once.
    public static let thumbnailsAtOnce = 6

    /// Where a photo's thumbnail is cached: by path and revision, so a new revision of a photo
    /// gets a new thumbnail and an unchanged one is never fetched again.
    public func thumbnailFile(for photo: Photo) -> URL {
        // Both parts escaped: they come from the server, and a `/` or `..` must not leave the folder.
        func escaped(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "_" }
        return paths.cache.appendingPathComponent("thumbnails", isDirectory: true)
            .appendingPathComponent("\(escaped(photo.metadata.path.lowercased()))@\(escaped(photo.metadata.rev ?? "0")).jpg")
    }

    /// The photos with their thumbnails, fetched by download tasks (`download(for:)`) (``thumbnailsAtOnce`` at a
    /// time) into the cache when not there yet. A thumbnail that cannot be had leaves the
    /// photo's `thumbnail` nil; `fetched` tells how many were downloaded this time.
    public func withThumbnails(_ photos: [Photo]) async -> (photos: [Photo], fetched: Int) {
        var result = photos
        var fetched = 0
        await withTaskGroup(of: (Int, URL?, Bool).self) { group in
            var next = 0
            func startNext() {
                guard next < photos.count else { return }
                let index = next
                next += 1
                group.addTask { await self.thumbnail(for: photos[index], index: index) }
            }
            for _ in 0..<Self.thumbnailsAtOnce { startNext() }
            for await (index, file, downloaded) in group {
                result[index].thumbnail = file
                if downloaded { fetched += 1 }
                startNext()
            }
        }
        return (result, fetched)
    }

    /// One photo's thumbnail: from the cache, else downloaded there.
    public func thumbnail(for photo: Photo) async -> URL? {
        await thumbnail(for: photo, index: 0).1
    }

    private func thumbnail(for photo: Photo, index: Int) async -> (Int, URL?, Bool) {
        let file = thumbnailFile(for: photo)
        if FileManager.default.fileExists(atPath: file.path) { return (index, file, false) }
        guard photo.metadata.thumbExists else { return (index, nil, false) }
        do {
            let (location, response) = try await session.download(for: URLRequest(url: routes.thumbnail(photo.metadata.path)))
            defer { try? FileManager.default.removeItem(at: location) }
            guard (response as? HTTPURLResponse)?.statusCode == 200 else { return (index, nil, false) }
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            // Another listing may have put it there meanwhile: theirs is as good.
            if rename(location.path, file.path) != 0 && !FileManager.default.fileExists(atPath: file.path) { return (index, nil, false) }
            return (index, file, true)
        } catch {
            return (index, nil, false)
        }
    }
}
