import Ferry
public import Foundation
import Logging
import NIOConcurrencyHelpers

/// The club's service, as the app talks to it: one ephemeral `URLSession` whose configuration
/// carries the account's `Authorization` header, as the tutorial's app had.
///
/// ```swift
/// let club = ByteClub(account: try ByteClubAccount.current())
/// for note in try await club.notes() { print(note.name, note.author ?? "") }
/// let saved = try await club.saveNote(named: "hello.txt", text: "Hi, club!")
/// ```
public final class ByteClub: Sendable {
    public let account: ByteClubAccount
    public let routes: ClubRoutes
    public let paths: ByteClubPaths
    let session: URLSession
    /// The session's delegate: the photo downloads' progress, files and endings.
    let downloads: DownloadRelay
    /// Told when the app waits for a busy service by itself ("the server asks to wait 2 s").
    let notice: @Sendable (String) -> Void
    /// The longest `Retry-After` the app waits out by itself; longer ones are reported.
    public static let longestWait = 30

    public init(account: ByteClubAccount, paths: ByteClubPaths = ByteClubPaths(), notice: @escaping @Sendable (String) -> Void = { _ in }) {
        self.account = account
        self.routes = ClubRoutes(server: account.server)
        self.paths = paths
        self.notice = notice
        // Ferry's own (no URLSessionConfiguration property): partial downloads live in the
        // cache, so Ctrl-C's resume data still finds them next run.
        var ephemeral = Configuration.ephemeral
        ephemeral.downloadDirectory = paths.cache.appendingPathComponent("partial", isDirectory: true)
        try? FileManager.default.createDirectory(at: ephemeral.downloadDirectory, withIntermediateDirectories: true)
        let configuration = URLSessionConfiguration(ephemeral)
        configuration.httpAdditionalHeaders = ["Authorization": account.authorization]
        downloads = DownloadRelay()
        session = URLSession(configuration: configuration, delegate: downloads, delegateQueue: nil)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Ferry's own notices (a cancelled upload) are not for the member: the app logs warnings
    /// and worse unless `BYTECLUB_LOG_LEVEL` asks for more. Call once, before anything logs.
    public static func bootstrapLogging(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let level = environment["BYTECLUB_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    // MARK: Notes

    /// The `.txt` files in the club's folder, by name.
    public func notes() async throws -> [Note] {
        let folder: FileMetadata
        do {
            folder = try await fetchJSON(URLRequest(url: routes.notesListing), what: "the club's folder /\(ClubRoutes.folder)")
        } catch ByteClubError.notFound {
            return []  // nobody wrote anything yet
        }
        return (folder.contents ?? []).filter(Note.isNote).map(Note.init).sorted { $0.name.localizedStandardCompare($1.name) == .orderedAscending }
    }

    /// A note's text and the metadata of the revision read (whose `rev` an edit names).
    public func readNote(named name: String) async throws -> (text: String, metadata: FileMetadata) {
        let path = ClubRoutes.notePath(name)
        let (data, response) = try await send(URLRequest(url: routes.file(path)), what: "note \(name)")
        let text = String(decoding: data, as: UTF8.self)
        if let header = response.value(forHTTPHeaderField: "x-dropbox-metadata"),
           let metadata = try? JSONDecoder().decode(FileMetadata.self, from: Data(header.utf8)) {
            return (text, metadata)
        }
        return (text, try await self.metadata(path))
    }

    /// What saving did: where the text went, and whether that is a conflicted copy because
    /// another member saved the note since `parentRev` was read.
    public struct SavedNote: Sendable {
        public var metadata: FileMetadata
        public var requestedName: String
        /// The note changed meanwhile: the text was kept under another name, nothing was lost.
        public var isConflictedCopy: Bool { metadata.name != requestedName }
    }

    /// Saves `text` as the note `name`: an upload task from `Data` (`PUT files_put`), a success
    /// only on HTTP 200. With `parentRev` it replaces that revision; without, it makes a new
    /// note (the service picks `name (1).txt` when the name is taken).
    public func saveNote(named name: String, text: String, parentRev: String? = nil) async throws -> SavedNote {
        var request = URLRequest(url: routes.put(ClubRoutes.notePath(name), parentRev: parentRev))
        request.httpMethod = "PUT"
        request.setValue("text/plain; charset=utf-8", forHTTPHeaderField: "Content-Type")
        let metadata: FileMetadata = try await upload(request, from: .data(Data(text.utf8)), what: "note \(name)")
        return SavedNote(metadata: metadata, requestedName: name)
    }

    // MARK: Calls

    /// One file's or folder's metadata.
    func metadata(_ path: String) async throws -> FileMetadata {
        var components = URLComponents(url: routes.file(path), resolvingAgainstBaseURL: false)!
        components.percentEncodedPath = components.percentEncodedPath.replacingOccurrences(of: "/1/files/", with: "/1/metadata/")
        components.queryItems = [URLQueryItem(name: "list", value: "false")]
        return try await fetchJSON(URLRequest(url: components.url!), what: path)
    }

    func fetchJSON<T: Decodable>(_ request: URLRequest, what: String) async throws -> T {
        let (data, _) = try await send(request, what: what)
        return try decode(data, what: what)
    }

    func decode<T: Decodable>(_ data: Data, what: String) throws -> T {
        do { return try JSONDecoder().decode(T.self, from: data) } catch {
            throw ByteClubError.server(status: 200, "the answer for \(what) is not what the app expects: \(error)")
        }
    }

    /// A data task (`data(for:)`); a 429/503 whose `Retry-After` is short is waited out (and
    /// said), anything else that is not 2xx becomes a ``ByteClubError``.
    func send(_ request: URLRequest, what: String) async throws -> (Data, HTTPURLResponse) {
        try await retryingWhenBusy(what: what) {
            do { return try await session.data(for: request) } catch let error as URLError { throw ByteClubError.from(error) }
        }
    }

    /// What an upload task sends: bytes in memory, or a file.
    enum UploadSource {
        case data(Data)
        case file(URL)
    }

    /// An upload task (the tutorial's `uploadTask(with:from:completionHandler:)`, awaited),
    /// answered with metadata; `progress` hears its `didSendBodyData` through a delegate of
    /// the task's own. Cancelling the calling Swift task cancels it.
    func upload(_ request: URLRequest, from source: UploadSource, what: String,
                progress: ProgressWatcher? = nil) async throws -> FileMetadata {
        let (data, _) = try await retryingWhenBusy(what: what) {
            let delegate = progress.map(UploadProgress.init)
            do {
                switch source {
                case .data(let body): return try await session.upload(for: request, from: body, delegate: delegate)
                case .file(let file): return try await session.upload(for: request, fromFile: file, delegate: delegate)
                }
            } catch let error as URLError {
                throw ByteClubError.from(error)
            }
        }
        return try decode(data, what: what)
    }

    /// Runs `attempt` again while the service answers 429/503 with a `Retry-After` of at most
    /// ``longestWait`` seconds (three times at most), telling the member each time.
    func retryingWhenBusy(what: String, _ attempt: () async throws -> (Data, URLResponse)) async throws -> (Data, HTTPURLResponse) {
        var waits = 0
        while true {
            let (data, answer) = try await attempt()
            guard let response = answer as? HTTPURLResponse else {
                throw ByteClubError.server(status: 0, "the answer for \(what) is not an HTTP response")
            }
            if (200..<300).contains(response.statusCode) { return (data, response) }
            let error = ByteClubError.from(response, body: data, what: what)
            guard case .busy(_, let retryAfter?) = error, retryAfter <= Self.longestWait, waits < 3 else { throw error }
            waits += 1
            notice("the server is busy (\(response.statusCode)); waiting \(retryAfter) s as it asks")
            try await Task.sleep(for: .seconds(retryAfter))
        }
    }
}
