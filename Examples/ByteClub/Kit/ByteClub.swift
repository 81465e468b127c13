import Ferry
import Foundation
import Logging
import NIOConcurrencyHelpers

/// The club's service, as the app talks to it: one ephemeral session whose configuration
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
    let session: Session
    let progress: ProgressRelay
    /// Told when the app waits for a busy service by itself ("the server asks to wait 2 s").
    let notice: @Sendable (String) -> Void
    /// The longest `Retry-After` the app waits out by itself; longer ones are reported.
    public static let longestWait = 30

    public init(account: ByteClubAccount, paths: ByteClubPaths = ByteClubPaths(), notice: @escaping @Sendable (String) -> Void = { _ in }) {
        self.account = account
        self.routes = ClubRoutes(server: account.server)
        self.paths = paths
        self.notice = notice
        var configuration = Configuration.ephemeral
        configuration.httpAdditionalHeaders = ["Authorization": account.authorization]
        // Partial downloads live in the cache so Ctrl-C's resume data still finds them next run.
        configuration.downloadDirectory = paths.cache.appendingPathComponent("partial", isDirectory: true)
        try? FileManager.default.createDirectory(at: configuration.downloadDirectory, withIntermediateDirectories: true)
        progress = ProgressRelay()
        // Ferry's own notices (a cancelled upload) are not for the member; BYTECLUB_LOG_LEVEL shows them.
        var logger = Logger(label: "byteclub")
        logger.logLevel = ProcessInfo.processInfo.environment["BYTECLUB_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        session = Session(configuration: configuration, delegate: progress, logger: logger)
    }

    deinit { session.finishTasksAndInvalidate() }

    // MARK: Notes

    /// The `.txt` files in the club's folder, by name.
    public func notes() async throws -> [Note] {
        let folder: FileMetadata
        do {
            folder = try await fetchJSON(Request(url: routes.notesListing), what: "the club's folder /\(ClubRoutes.folder)")
        } catch ByteClubError.notFound {
            return []  // nobody wrote anything yet
        }
        return (folder.contents ?? []).filter(Note.isNote).map(Note.init).sorted { $0.name.localizedStandardCompare($1.name) == .orderedAscending }
    }

    /// A note's text and the metadata of the revision read (whose `rev` an edit names).
    public func readNote(named name: String) async throws -> (text: String, metadata: FileMetadata) {
        let path = ClubRoutes.notePath(name)
        let (data, response) = try await send(Request(url: routes.file(path)), what: "note \(name)")
        let text = String(decoding: data, as: UTF8.self)
        if let header = response.headers["x-dropbox-metadata"], let metadata = try? JSONDecoder().decode(FileMetadata.self, from: Data(header.utf8)) {
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
        var request = Request(url: routes.put(ClubRoutes.notePath(name), parentRev: parentRev), method: "PUT")
        request.headers["Content-Type"] = "text/plain; charset=utf-8"
        let metadata: FileMetadata = try await upload(request, body: .data(Data(text.utf8)), what: "note \(name)")
        return SavedNote(metadata: metadata, requestedName: name)
    }

    // MARK: Calls

    /// One file's or folder's metadata.
    func metadata(_ path: String) async throws -> FileMetadata {
        var components = URLComponents(url: routes.file(path), resolvingAgainstBaseURL: false)!
        components.percentEncodedPath = components.percentEncodedPath.replacingOccurrences(of: "/1/files/", with: "/1/metadata/")
        components.queryItems = [URLQueryItem(name: "list", value: "false")]
        return try await fetchJSON(Request(url: components.url!), what: path)
    }

    func fetchJSON<T: Decodable>(_ request: Request, what: String) async throws -> T {
        let (data, _) = try await send(request, what: what)
        return try decode(data, what: what)
    }

    func decode<T: Decodable>(_ data: Data, what: String) throws -> T {
        do { return try JSONDecoder().decode(T.self, from: data) } catch {
            throw ByteClubError.server(status: 200, "the answer for \(what) is not what the app expects: \(error)")
        }
    }

    /// A data task; a 429/503 whose `Retry-After` is short is waited out (and said), anything
    /// else that is not 2xx becomes a ``ByteClubError``.
    func send(_ request: Request, what: String) async throws -> (Data, Response) {
        try await retryingWhenBusy(what: what) {
            do { return try await session.data(for: request) } catch let error as FerryError { throw ByteClubError.from(error) }
        }
    }

    /// An upload task (the tutorial's `uploadTaskWithRequest:fromData:`), answered with metadata.
    func upload(_ request: Request, body: UploadBody, what: String, watcher: ProgressRelay.Watcher? = nil) async throws -> FileMetadata {
        let (data, _) = try await retryingWhenBusy(what: what) { try await runUpload(request, body: body, watcher: watcher) }
        return try decode(data, what: what)
    }

    private func runUpload(_ request: Request, body: UploadBody, watcher: ProgressRelay.Watcher?) async throws -> (Data, Response) {
        let outcome = Outcome<(Data, Response)>()
        let task = session.uploadTask(with: request, body: body) { data, response, error in
            if let error { outcome.set(.failure(ByteClubError.from(error))) }
            else if let response { outcome.set(.success((data ?? Data(), response))) }
        }
        if let watcher { progress.watch(task, with: watcher) }
        defer { progress.stopWatching(task) }
        return try await run(task) { try outcome.get(or: task) }
    }

    /// Resumes `task` and waits for it; cancelling the caller cancels it (with `cancel` when
    /// given: a download's keeps resume data).
    func run<T>(_ task: SessionTask, cancel: (@Sendable () -> Void)? = nil, outcome: () throws -> T) async throws -> T {
        await withTaskCancellationHandler {
            task.resume()
            await task.waitUntilCompleted()
        } onCancel: {
            if let cancel { cancel() } else { task.cancel() }
        }
        return try outcome()
    }

    /// Runs `attempt` again while the service answers 429/503 with a `Retry-After` of at most
    /// ``longestWait`` seconds (three times at most), telling the member each time.
    func retryingWhenBusy(what: String, _ attempt: () async throws -> (Data, Response)) async throws -> (Data, Response) {
        var waits = 0
        while true {
            let (data, response) = try await attempt()
            if (200..<300).contains(response.statusCode) { return (data, response) }
            let error = ByteClubError.from(status: response.statusCode, headers: response.headers, body: data, what: what)
            guard case .busy(_, let retryAfter?) = error, retryAfter <= Self.longestWait, waits < 3 else { throw error }
            waits += 1
            notice("the server is busy (\(response.statusCode)); waiting \(retryAfter) s as it asks")
            try await Task.sleep(for: .seconds(retryAfter))
        }
    }
}

/// A task's result, set once by its completion handler.
final class Outcome<Value: Sendable>: Sendable {
    private let box = NIOLockedValueBox<Result<Value, any Error>?>(nil)
    func set(_ result: Result<Value, any Error>) { box.withLockedValue { $0 = $0 ?? result } }
    func get(or task: SessionTask) throws -> Value {
        guard let result = box.withLockedValue({ $0 }) else {
            throw task.error.map(ByteClubError.from) ?? ByteClubError.unreachable("the transfer ended without an answer")
        }
        return try result.get()
    }
}
