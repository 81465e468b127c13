public import Logging
import Synchronization

/// A log handler that keeps every message at or above its level, for tests that look at what
/// a component logged (which path a transfer took, that a secret was not written).
///
/// ```swift
/// let records = RecordingLogHandler.Records()
/// let logger = Logger(label: "test") { _ in RecordingLogHandler(records, level: .debug) }
/// // … run something with `logger` …
/// #expect(records.messages.contains { $0.message == "request" && $0.metadata["on"] == "loop" })
/// ```
public struct RecordingLogHandler: LogHandler {
    /// One message as logged, its metadata rendered as text.
    public struct Message: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    /// Where the messages go; shared by every copy of the handler.
    public final class Records: Sendable {
        private let kept = Mutex<[Message]>([])
        public init() {}
        public var messages: [Message] { kept.withLock { $0 } }
        func append(_ message: Message) { kept.withLock { $0.append(message) } }
    }

    private let records: Records
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]

    public init(_ records: Records, level: Logger.Level = .trace) {
        self.records = records
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        records.append(Message(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
    }
}
