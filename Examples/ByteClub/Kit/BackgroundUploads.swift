import ExampleSupport
public import Ferry
public import Foundation
import NIOConcurrencyHelpers

/// Photo uploads handed to ferryd: `byteclub photos upload --background` returns at once, the
/// uploads go on without it (through exits, crashes and reboots), and ferryd starts `byteclub`
/// to tell it how they ended; each ending is written to the history exactly once, by whichever
/// process receives it.
///
/// ```swift
/// let tasks = try BackgroundUploads.start([photo], club: club)     // returns once ferryd has them
/// // later, in the process ferryd starts:
/// if let launch = BackgroundLaunch.current { try await BackgroundUploads.handle(launch, paths: ByteClubPaths()) }
/// ```
public enum BackgroundUploads {
    /// The background session's identifier (the app's manifest lets ferryd start `byteclub` for it).
    public static let sessionIdentifier = "org.ferry.byteclub.uploads"

    /// The session the uploads go through; its `Authorization` header goes with each task to ferryd.
    public static func configuration(for account: ByteClubAccount?) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.background(withIdentifier: sessionIdentifier)
        if let account { configuration.httpAdditionalHeaders = ["Authorization": account.authorization] }
        return configuration
    }

    /// Hands each file to ferryd as an upload task (described by the photo's name) and
    /// disconnects; returns the tasks' identifiers.
    public static func start(_ files: [URL], club: ByteClub) throws -> [(file: URL, task: Int)] {
        let history = History(paths: club.paths)
        let session = try backgroundSession(configuration(for: club.account), delegate: HistoryRecorder(history: history))
        defer { session.finishTasksAndInvalidate() }
        return try files.map { file in
            guard FileManager.default.isReadableFile(atPath: file.path) else { throw ByteClubError.local("cannot read \(file.path)") }
            let task = session.uploadTask(with: club.photoUpload(file.lastPathComponent), fromFile: file)
            task.taskDescription = file.lastPathComponent
            task.resume()  // in ferryd's store when this returns
            if let error = task.error { throw ByteClubError.from(error) }
            return (file, task.taskIdentifier)
        }
    }

    /// In the process ferryd started (Ferry's `BackgroundLaunch`, the Linux form of
    /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`): takes the
    /// session's events, records them, and returns when ferryd says they are all delivered
    /// (or after `timeout`).
    public static func handle(_ launch: BackgroundLaunch, paths: ByteClubPaths, timeout: Duration = .seconds(120)) async throws -> Bool {
        let recorder = HistoryRecorder(history: History(paths: paths), whenEventsFinished: launch.completionHandler)
        let session = try backgroundSession(configuration(for: nil), delegate: recorder)
        let finished = await launch.waitForCompletionHandler(timeout: timeout)
        session.finishTasksAndInvalidate()
        return finished
    }

    /// The background session, or why ferryd cannot take it.
    static func backgroundSession(_ configuration: URLSessionConfiguration, delegate: HistoryRecorder) throws -> URLSession {
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        // Ferry's own check: the platform's session cannot fail to start, ferryd's can.
        if let failure = session.session.backgroundConnectionError { throw ByteClubError.from(URLError(failure)) }
        return session
    }
}

/// How one background upload ended, as `byteclub history` shows it.
public struct UploadOutcome: Codable, Sendable, Equatable {
    /// ferryd's task identifier: the key that keeps each outcome written once.
    public var task: Int
    /// The file's name as it was handed over.
    public var name: String
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// The name the service stored it under (`name (1).jpg` when the name was taken).
    public var storedAs: String?
    public var error: String?
    public var date: Date
}

/// The history of background uploads: one JSON line per task in `$XDG_DATA_HOME/byteclub/uploads.jsonl`.
public struct History: Sendable {
    let file: JSONLinesFile<UploadOutcome>

    public init(paths: ByteClubPaths) {
        file = JSONLinesFile(url: paths.data.appendingPathComponent("uploads.jsonl"))
    }

    public func read() throws -> [UploadOutcome] { try file.read() }

    /// Writes `outcome` unless its task is already there: an event delivered again (a process
    /// killed between recording it and ferryd's acknowledgement) is not written twice.
    func record(_ outcome: UploadOutcome) throws {
        try FileManager.default.createDirectory(at: file.url.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard try !read().contains(where: { $0.task == outcome.task }) else { return }
        try file.append(outcome)
    }
}

/// The background session's delegate in both processes: keeps each upload's answer (by task,
/// as the samples do) and writes its outcome when it completes.
final class HistoryRecorder: NSObject, Sendable {
    private let history: History
    private let answers = NIOLockedValueBox<[URLSessionTask: Data]>([:])
    private let whenEventsFinished: (@Sendable () -> Void)?

    init(history: History, whenEventsFinished: (@Sendable () -> Void)? = nil) {
        self.history = history
        self.whenEventsFinished = whenEventsFinished
    }
}

extension HistoryRecorder: URLSessionDataDelegate {
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        answers.withLockedValue { $0[dataTask, default: Data()].append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let answer = answers.withLockedValue { $0.removeValue(forKey: task) } ?? Data()
        let response = task.response as? HTTPURLResponse
        let name = task.taskDescription ?? task.originalRequest?.url?.lastPathComponent ?? ""
        var outcome = UploadOutcome(
            task: task.taskIdentifier, name: name, status: response?.statusCode, storedAs: nil,
            error: error.map { ByteClubError.from($0).description }, date: Date())
        if let response, error == nil {
            if response.statusCode == 200 {
                outcome.storedAs = (try? JSONDecoder().decode(FileMetadata.self, from: answer))?.name
            } else {
                outcome.error = ByteClubError.from(response, body: answer, what: "photo \(outcome.name)").description
            }
        }
        do { try history.record(outcome) } catch {
            FileHandle.standardError.write(Data("byteclub: cannot record upload #\(task.taskIdentifier): \(error)\n".utf8))
        }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        whenEventsFinished?()
    }
}
