public import ExampleSupport
public import Ferry
public import Foundation
import Synchronization

/// What ImgShare's app and share extension have in common: the app group, the background
/// session, the settings and history in the group's container, and ``ImgurService``, which
/// both use to learn how an upload went (rule 5: the same completion code in both).
public enum ImgShare {
    /// The app group and the background session the app and the extension share.
    public static let group = AppGroupSession(appGroup: "group.org.ferry.imgshare", sessionIdentifier: "org.ferry.imgshare.upload")
    public static let extensionBundleIdentifier = "org.ferry.imgshare.share"
    /// Imgur's limit on a title.
    public static let maxTitleLength = 128

    public static func settings() throws -> SettingsFile<Settings> {
        SettingsFile(url: try group.file("settings.json"))
    }

    public static func history() throws -> JSONLinesFile<Upload> {
        JSONLinesFile(url: try group.file("history.jsonl"))
    }

    /// Images waiting to be uploaded: copied here first, so an upload survives the user moving
    /// or deleting the original while ferryd carries it. Removed once the upload has ended.
    public static func outbox() throws -> URL {
        let outbox = try group.file("outbox")
        try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return outbox
    }
}

/// The Imgur-shaped server and the app's Client-ID.
public struct Settings: Codable, Sendable {
    public var server: URL
    public var clientID: String
    public init(server: URL, clientID: String) {
        self.server = server
        self.clientID = clientID
    }
}

/// An uploaded image, from the server's `{data: {...}, success, status}` envelope.
public struct ImgurImage: Codable, Sendable, Equatable {
    public var id: String
    public var link: String
    public var width: Int?
    public var height: Int?
    public var size: Int?
    public var deletehash: String?
    public var title: String?
}

/// One line of the history: an upload and how it ended.
public struct Upload: Codable, Sendable {
    public var task: Int
    public var file: String
    public var title: String?
    public var link: String?
    public var status: Int?
    public var error: String?
    /// "app" or "extension".
    public var handledBy: String
    public var date: Date
}

/// The screencast's ImgurService: starts uploads in the background session, keeps a
/// completion callback and the response bytes per task (dictionaries keyed by the task), and
/// decides success (HTTP 200 with an image in the envelope). Tasks finished in another process
/// (the extension that started them has exited) go to `fallback`, which the app sets to record them.
public final class ImgurService: NSObject, Sendable {
    public typealias Completion = @Sendable (Result<ImgurImage, ExampleError>, URLSessionTask) -> Void

    private struct State {
        var callbacks: [URLSessionTask: Completion] = [:]
        var requestData: [URLSessionTask: Data] = [:]
    }
    private let state = Mutex(State())
    private let fallback: Completion
    private let whenEventsFinished: (@Sendable () -> Void)?

    public init(fallback: @escaping Completion, whenEventsFinished: (@Sendable () -> Void)? = nil) {
        self.fallback = fallback
        self.whenEventsFinished = whenEventsFinished
    }

    /// Uploads the image file (raw bytes) with the app's Client-ID; `completion` is called
    /// in this process if the upload ends while it is connected.
    public func upload(_ file: URL, contentType: String, title: String?, settings: Settings, session: URLSession,
                       completion: @escaping Completion) -> URLSessionUploadTask {
        var components = URLComponents(url: settings.server.appendingPathComponent("3/image"), resolvingAgainstBaseURL: false)!
        if let title, !title.isEmpty { components.queryItems = [URLQueryItem(name: "title", value: title)] }
        var request = URLRequest(url: components.url!)
        request.httpMethod = "POST"
        request.setValue("Client-ID \(settings.clientID)", forHTTPHeaderField: "Authorization")
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        let upload = session.uploadTask(with: request, fromFile: file)
        state.withLock { $0.callbacks[upload] = completion }
        return upload
    }

    static func image(from body: Data) -> ImgurImage? {
        struct Envelope: Decodable { var data: ImgurImage; var success: Bool }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: body), envelope.success else { return nil }
        return envelope.data
    }

    /// What both programs do with a finished upload: record it and remove the outbox copy.
    public static func record(_ result: Result<ImgurImage, ExampleError>, task: URLSessionTask, handledBy: String) {
        let file = task.taskDescription ?? ""
        var upload = Upload(task: task.taskIdentifier, file: file, handledBy: handledBy, date: Date())
        switch result {
        case .success(let image):
            upload.link = image.link
            upload.title = image.title
            upload.status = 200
        case .failure(let error):
            upload.status = (task.response as? HTTPURLResponse)?.statusCode
            upload.error = error.description
        }
        do {
            // Delivery is at least once (an extension may exit before ferryd heard that it
            // handled the completion, and the app hears it again): record each upload once.
            let history = try ImgShare.history()
            guard !(try history.read().contains { $0.task == upload.task }) else { return }
            try history.append(upload)
            if !file.isEmpty { try? FileManager.default.removeItem(at: try ImgShare.outbox().appendingPathComponent(file)) }
        } catch {
            FileHandle.standardError.write(Data("imgshare: cannot record upload \(task.taskIdentifier): \(error)\n".utf8))
        }
    }
}

extension ImgurService: URLSessionDataDelegate {
    /// The answer comes in one or more pieces: kept per task until it completes.
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        state.withLock { $0.requestData[dataTask, default: Data()].append(data) }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let (callback, body) = state.withLock { state in
            (state.callbacks.removeValue(forKey: task), state.requestData.removeValue(forKey: task) ?? Data())
        }
        let status = (task.response as? HTTPURLResponse)?.statusCode
        let result: Result<ImgurImage, ExampleError>
        if let error {
            result = .failure(ExampleError(TransferFailure.summary(error)))
        } else if status == 200, let image = Self.image(from: body) {
            result = .success(image)
        } else {
            let message = (try? JSONSerialization.jsonObject(with: body) as? [String: Any]).flatMap { ($0["data"] as? [String: Any])?["error"] as? String }
            result = .failure(ExampleError("HTTP \(status ?? 0)" + (message.map { ": \($0)" } ?? "")))
        }
        (callback ?? fallback)(result, task)
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        whenEventsFinished?()
    }
}
