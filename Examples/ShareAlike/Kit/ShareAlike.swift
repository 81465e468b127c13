public import ExampleSupport
public import Ferry
public import Foundation

/// What the ShareAlike app and its share extension have in common: the app group, the
/// background session, the settings (in the group's defaults) and the history (in the group's
/// container), the JSON the extension posts, and the code that records how a post went — run
/// by whichever process ferryd tells (rule 5: both handle completion with this same code).
public enum ShareAlike {
    /// The app group and the background session the app and the extension share.
    public static let group = AppGroupSession(appGroup: "group.org.ferry.sharealike", sessionIdentifier: "org.ferry.sharealike.post")
    public static let extensionBundleIdentifier = "org.ferry.sharealike.share"
    /// The tutorial's limit on the text.
    public static let maxCharacterCount = 25

    /// The group's defaults, where the platform's samples keep settings the app and its
    /// extension share: `UserDefaults(suiteName:)` of the app group (Ferry keeps the file in
    /// the group's container once `ferry apps install` has run).
    public static var defaults: UserDefaults {
        UserDefaults(suiteName: group.appGroup) ?? .standard
    }

    public static func history() throws -> JSONLinesFile<HistoryEntry> {
        JSONLinesFile(url: try group.file("history.jsonl"))
    }

    /// The request the extension hands to the background session: JSON in, JSON accepted
    /// (the tutorial's `urlRequestWithImage(_:text:)`; the JSON goes as the upload's body).
    public static func postRequest(to bin: URL) -> URLRequest {
        var request = URLRequest(url: bin)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }
}

/// Where posts go: a request bin (byteclub-server's, made by `sharealike setup`), kept in the
/// group's defaults.
public struct Settings: Sendable {
    public var binURL: URL
    public init(binURL: URL) { self.binURL = binURL }

    static let binURLKey = "binURL"

    /// What `sharealike setup` saved; nil before it ran.
    public static func load() -> Settings? {
        ShareAlike.defaults.string(forKey: binURLKey).flatMap(URL.init(string:)).map(Settings.init)
    }

    public func save() {
        ShareAlike.defaults.set(binURL.absoluteString, forKey: Self.binURLKey)
        ShareAlike.defaults.synchronize()  // the extension runs in another process, maybe at once
    }
}

/// The body ShareAlike posts, as the tutorial built it.
public struct Post: Codable, Sendable, Equatable {
    public var text: String
    public var image_details: ImageSummary?

    /// The image as UIKit describes it: `height` and `width` as shown upright (a `UIImage`'s
    /// size), `orientation` in `UIImage.Orientation`'s numbering (up 0, down 1, left 2, right 3,
    /// then upMirrored 4 … rightMirrored 7), `description` naming the stored size and EXIF value.
    public struct ImageSummary: Codable, Sendable, Equatable {
        public var height: Int
        public var width: Int
        public var orientation: Int
        public var scale: Double
        public var description: String
        public init(height: Int, width: Int, orientation: Int, scale: Double, description: String) {
            self.height = height
            self.width = width
            self.orientation = orientation
            self.scale = scale
            self.description = description
        }
    }

    public init(text: String, image_details: ImageSummary?) {
        self.text = text
        self.image_details = image_details
    }
}

/// One line of the history: a post handed over, or how one ended.
public struct HistoryEntry: Codable, Sendable {
    public enum Event: String, Codable, Sendable { case posted, completed }
    public var event: Event
    public var task: Int
    public var date: Date
    /// For `posted`: what was sent.
    public var post: Post?
    public var bin: String?
    /// For `completed`: the HTTP status, or the error.
    public var status: Int?
    public var error: String?
    /// "app" or "extension": who recorded the completion.
    public var handledBy: String?

    public init(event: Event, task: Int, date: Date = Date(), post: Post? = nil, bin: String? = nil,
                status: Int? = nil, error: String? = nil, handledBy: String? = nil) {
        self.event = event
        self.task = task
        self.date = date
        self.post = post
        self.bin = bin
        self.status = status
        self.error = error
        self.handledBy = handledBy
    }
}

/// The session delegate both programs use: records each post's outcome in the history, and
/// calls `whenEventsFinished` once ferryd has delivered everything.
public final class PostsDelegate: NSObject, Sendable {
    private let role: String
    private let whenEventsFinished: (@Sendable () -> Void)?

    public init(role: String, whenEventsFinished: (@Sendable () -> Void)? = nil) {
        self.role = role
        self.whenEventsFinished = whenEventsFinished
    }
}

extension PostsDelegate: URLSessionTaskDelegate {
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let entry = HistoryEntry(event: .completed, task: task.taskIdentifier, status: (task.response as? HTTPURLResponse)?.statusCode,
                                 error: error.map(TransferFailure.summary), handledBy: role)
        do {
            // Delivery is at least once: an extension that handled the completion may exit
            // before ferryd heard so, and the app then hears it again. Record it once.
            let history = try ShareAlike.history()
            guard !(try history.read().contains { $0.event == .completed && $0.task == entry.task }) else { return }
            try history.append(entry)
        } catch {
            FileHandle.standardError.write(Data("sharealike: cannot record post \(task.taskIdentifier): \(error)\n".utf8))
        }
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        whenEventsFinished?()
    }
}
