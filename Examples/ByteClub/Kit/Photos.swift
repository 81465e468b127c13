public import Ferry
public import Foundation
import NIOConcurrencyHelpers

extension ByteClub {
    /// The club's photos (`search …/photos?query=.jpg`), by name, without thumbnails.
    public func photos() async throws -> [Photo] {
        let found: [FileMetadata]
        do {
            found = try await fetchJSON(URLRequest(url: routes.photosSearch), what: "the photos folder /\(ClubRoutes.photosFolder)")
        } catch ByteClubError.notFound {
            return []  // no photo uploaded yet
        }
        return found.filter { !$0.isDirectory }
            .sorted { $0.name.localizedStandardCompare($1.name) == .orderedAscending }
            .map { Photo(metadata: $0, thumbnail: nil) }
    }

    /// Uploads a photo from a file with an upload task (`PUT files_put`, never over another
    /// member's photo: the service picks `name (1).jpg`), calling `progress` as bytes go out.
    /// Cancelling the calling task stops it; the service keeps nothing of a cut upload.
    public func uploadPhoto(_ file: URL, as name: String? = nil, progress: (@Sendable (TransferProgress) -> Void)? = nil) async throws -> FileMetadata {
        let name = name ?? file.lastPathComponent
        guard FileManager.default.isReadableFile(atPath: file.path) else { throw ByteClubError.local("cannot read \(file.path)") }
        return try await upload(photoUpload(name), from: .file(file), what: "photo \(name)", progress: progress)
    }

    /// The request that uploads the photo `name` (the background uploads send the same).
    public func photoUpload(_ name: String) -> URLRequest {
        var request = URLRequest(url: routes.put(ClubRoutes.photoPath(name), parentRev: nil))
        request.httpMethod = "PUT"
        request.setValue("image/jpeg", forHTTPHeaderField: "Content-Type")
        return request
    }

    /// What a photo download did.
    public struct PhotoDownload: Sendable {
        public var file: URL
        public var bytes: Int64
        /// Where it continued from resume data (its answer was a 206), or nil for a whole download.
        public var resumedAt: Int64?
    }

    /// Downloads a photo to `destination` (never over an existing file) with a download task
    /// and the session's delegate. When the caller is cancelled (Ctrl-C) the task is cancelled
    /// *producing resume data* (`cancel(byProducingResumeData:)`), kept in the cache beside the
    /// partial file; the next call for the same photo continues from there with
    /// `downloadTask(withResumeData:)` (a range request, a `206`), as the tutorial's pause and
    /// resume did.
    public func downloadPhoto(named name: String, to destination: URL, progress: (@Sendable (TransferProgress) -> Void)? = nil) async throws -> PhotoDownload {
        guard !FileManager.default.fileExists(atPath: destination.path) else {
            throw ByteClubError.usage("\(destination.path) exists; choose another name with -o")
        }
        let path = ClubRoutes.photoPath(name)
        let resume = ResumeDataFile(paths: paths, path: path)
        let task = resume.load().map(session.downloadTask(withResumeData:)) ?? session.downloadTask(with: URLRequest(url: routes.file(path)))
        let staged = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).byteclub-\(getpid())")
        let arrived = NIOLockedValueBox<Result<URL, ByteClubError>?>(nil)
        let resumedAt = NIOLockedValueBox<Int64?>(nil)
        let ending = Ending()
        downloads.watch(task, progress: { step in
            if step.resumedAt > 0 { resumedAt.withLockedValue { $0 = $0 ?? step.resumedAt } }
            progress?(step)
        }, arrival: { location in
            // Moved at once: the session deletes the file when this returns.
            do {
                try FileManager.default.moveItem(at: location, to: staged)
                arrived.withLockedValue { $0 = .success(staged) }
            } catch {
                arrived.withLockedValue { $0 = .failure(ByteClubError.local("cannot keep the download at \(staged.path): \(error)")) }
            }
        }, ending: ending)
        let failure = await withTaskCancellationHandler {
            task.resume()
            return await ending.wait()
        } onCancel: {
            // The resume data comes with the task's error too, which is where it is taken from.
            task.cancel(byProducingResumeData: { _ in })
        }
        if let failure {
            // Ctrl-C, or a connection lost for good: keep what can continue; never keep what cannot.
            let error = failure as? URLError
            if let data = error?.downloadTaskResumeData { try resume.save(data) } else { resume.remove() }
            // Resume data the session cannot use (Ferry says `cannotDecodeRawData`): start over.
            if error?.code == .cannotDecodeRawData { return try await downloadPhoto(named: name, to: destination, progress: progress) }
            throw ByteClubError.from(failure)
        }
        resume.remove()
        guard let file = try arrived.withLockedValue({ $0 })?.get() else {
            throw ByteClubError.unreachable("the transfer ended without an answer")
        }
        let response = task.response as? HTTPURLResponse
        guard let response, response.statusCode == 200 || response.statusCode == 206 else {
            let body = try? FileHandle(forReadingFrom: file).read(upToCount: 64 << 10)
            try? FileManager.default.removeItem(at: file)
            throw ByteClubError.from(response, body: body ?? nil, what: "photo \(name)")
        }
        do {
            try FileManager.default.moveItem(at: file, to: destination)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw ByteClubError.local("cannot put the photo at \(destination.path): \(error)")
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int64) ?? 0
        return PhotoDownload(file: destination, bytes: bytes, resumedAt: resumedAt.withLockedValue { $0 })
    }
}

/// A paused download's resume data, one file per photo in the cache.
struct ResumeDataFile {
    let url: URL

    init(paths: ByteClubPaths, path: String) {
        let name = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path
        url = paths.cache.appendingPathComponent("resume", isDirectory: true).appendingPathComponent(name + ".resumedata")
    }

    func load() -> Data? { FileManager.default.contents(atPath: url.path) }

    func save(_ data: Data) throws {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url, options: .atomic)
        } catch {
            throw ByteClubError.local("cannot keep resume data at \(url.path): \(error)")
        }
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}
