public import Ferry
public import Foundation
import NIOConcurrencyHelpers

/// What the PhotoDrop app and its share extension have in common: the app group, the
/// background session, and the code that handles a finished upload — which one of them
/// gets "did complete" is not decided in advance (a fast upload may finish while the
/// extension is still connected), so both run this same code.
///
/// PhotoDrop is the sample of Ferry's own API (`Session`, `Configuration`, `SessionDelegate`);
/// ShareAlike, ImgShare and Byte Club show the same things in URLSession's spelling.
public enum PhotoDrop {
    public static let appGroup = "group.org.ferry.photodrop"
    public static let sessionIdentifier = "org.ferry.photodrop.upload"

    public static var configuration: Configuration {
        var configuration = Configuration.background(identifier: sessionIdentifier)
        configuration.sharedContainerIdentifier = appGroup
        return configuration
    }

    /// The group's shared container, for this program if it is a member.
    public static func container() throws -> URL {
        try SharedContainer.url(forSecurityApplicationGroupIdentifier: appGroup)
    }
}

/// One finished upload, as the log keeps it.
public struct UploadRecord: Codable, Sendable {
    public var task: Int
    public var status: Int?
    public var response: String?
    public var error: String?
    /// "app" or "extension": who handled the completion.
    public var handledBy: String
    public var pid: Int32
    public var date: Date
}

/// The history of uploads: one JSON line each in the shared container.
public enum UploadLog {
    public static func file() throws -> URL { try PhotoDrop.container().appendingPathComponent("uploads.jsonl") }

    public static func append(_ record: UploadRecord) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var line = try encoder.encode(record)
        line.append(0x0A)
        let url = try file()
        if !FileManager.default.fileExists(atPath: url.path),
            !FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: line)
    }

    public static func read() throws -> [UploadRecord] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let data = try? Data(contentsOf: try file()) else { return [] }
        return try data.split(separator: 0x0A).map { try decoder.decode(UploadRecord.self, from: Data($0)) }
    }
}

/// The delegate both programs use: keeps each task's response bytes, records the outcome
/// when the task completes, and calls `whenEventsFinished` after ferryd delivered everything.
public final class UploadsDelegate: SessionDelegate {
    private let role: String
    private let received = NIOLockedValueBox<[Int: Data]>([:])
    private let whenEventsFinished: (@Sendable () -> Void)?

    public init(role: String, whenEventsFinished: (@Sendable () -> Void)? = nil) {
        self.role = role
        self.whenEventsFinished = whenEventsFinished
    }

    public func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {
        received.withLockedValue { $0[dataTask.taskIdentifier, default: Data()].append(data) }
    }

    public func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        let body = received.withLockedValue { $0.removeValue(forKey: task.taskIdentifier) } ?? Data()
        let record = UploadRecord(
            task: task.taskIdentifier, status: task.response?.statusCode,
            response: String(decoding: body, as: UTF8.self), error: error.map { "\($0.code): \($0.message)" },
            handledBy: role, pid: getpid(), date: Date())
        do { try UploadLog.append(record) } catch { FileHandle.standardError.write(Data("photodrop: cannot record the upload: \(error)\n".utf8)) }
    }

    public func sessionDidFinishEvents(forBackgroundSession session: Session) async {
        whenEventsFinished?()
    }
}
