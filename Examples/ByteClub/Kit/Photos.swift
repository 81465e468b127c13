public import Ferry
public import Foundation

extension ByteClub {
    /// The club's photos (`search …/photos?query=.jpg`), by name, without thumbnails.
    public func photos() async throws -> [Photo] {
        let found: [FileMetadata]
        do {
            found = try await fetchJSON(Request(url: routes.photosSearch), what: "the photos folder /\(ClubRoutes.photosFolder)")
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
        return try await upload(photoUpload(name), body: .file(file), what: "photo \(name)", watcher: progress)
    }

    /// The request that uploads the photo `name` (the background uploads send the same).
    public func photoUpload(_ name: String) -> Request {
        var request = Request(url: routes.put(ClubRoutes.photoPath(name), parentRev: nil), method: "PUT")
        request.headers["Content-Type"] = "image/jpeg"
        return request
    }

    /// What a photo download did.
    public struct PhotoDownload: Sendable {
        public var file: URL
        public var bytes: Int64
        /// Where it continued from resume data (its answer was a 206), or nil for a whole download.
        public var resumedAt: Int64?
    }

    /// Downloads a photo to `destination` (never over an existing file) with a download task.
    /// When the caller is cancelled (Ctrl-C) the task is cancelled *producing resume data*,
    /// kept in the cache beside the partial file; the next call for the same photo continues
    /// from there with a range request (a `206`), as the tutorial's pause and resume did.
    public func downloadPhoto(named name: String, to destination: URL, progress: (@Sendable (TransferProgress) -> Void)? = nil) async throws -> PhotoDownload {
        guard !FileManager.default.fileExists(atPath: destination.path) else {
            throw ByteClubError.usage("\(destination.path) exists; choose another name with -o")
        }
        let path = ClubRoutes.photoPath(name)
        let resume = ResumeDataFile(paths: paths, path: path)
        let task = resume.load().map(session.downloadTask(withResumeData:)) ?? session.downloadTask(with: Request(url: routes.file(path)))
        let staged = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).byteclub-\(getpid())")
        let arrived = Outcome<URL>()
        let resumedAt = Outcome<Int64>()
        self.progress.watch(task, with: { step in
            if step.resumedAt > 0 { resumedAt.set(.success(step.resumedAt)) }
            progress?(step)
        }, arrival: { location in
            // Moved at once: the session deletes the file when this returns.
            do {
                try FileManager.default.moveItem(at: location, to: staged)
                arrived.set(.success(staged))
            } catch {
                arrived.set(.failure(ByteClubError.local("cannot keep the download at \(staged.path): \(error)")))
            }
        })
        defer { self.progress.stopWatching(task) }
        try await run(task, cancel: { Task { _ = await task.cancelByProducingResumeData() } }) {}
        if let error = task.error {
            // Ctrl-C, or a connection lost for good: keep what can continue; never keep what cannot.
            if let data = error.resumeData { try resume.save(data) } else { resume.remove() }
            if error.code == .cannotDecodeResumeData { return try await downloadPhoto(named: name, to: destination, progress: progress) }
            if error.code == .cancelled { throw ByteClubError.cancelled }
            throw ByteClubError.from(error)
        }
        resume.remove()
        let file = try arrived.get(or: task)
        guard let response = task.response, response.statusCode == 200 || response.statusCode == 206 else {
            let body = try? FileHandle(forReadingFrom: file).read(upToCount: 64 << 10)
            try? FileManager.default.removeItem(at: file)
            let status = task.response?.statusCode ?? 0
            throw ByteClubError.from(status: status, headers: task.response?.headers ?? [:], body: body ?? nil, what: "photo \(name)")
        }
        do {
            try FileManager.default.moveItem(at: file, to: destination)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw ByteClubError.local("cannot put the photo at \(destination.path): \(error)")
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int64) ?? 0
        return PhotoDownload(file: destination, bytes: bytes, resumedAt: try? resumedAt.get(or: task))
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
