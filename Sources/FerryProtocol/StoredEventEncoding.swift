public import Foundation
public import NIOCore

/// An event of one session as ferryd stores it, its kind already JSON (the kind's own
/// encoding by ``MessageCoder``): what ``MessageCoder/encodeEvents(_:sessionIdentifier:)`` sends.
public struct StoredEvent: Sendable {
    public var sequence: Int64
    public var taskIdentifier: Int?
    public var kindJSON: String
    public var storedAt: Date?
    public var committedAt: Date?

    public init(sequence: Int64, taskIdentifier: Int?, kindJSON: String, storedAt: Date? = nil, committedAt: Date? = nil) {
        self.sequence = sequence
        self.taskIdentifier = taskIdentifier
        self.kindJSON = kindJSON
        self.storedAt = storedAt
        self.committedAt = committedAt
    }
}

extension MessageCoder {
    /// The payloads of `event` messages whose kinds are already JSON: the stored text goes in
    /// as it is, where decoding it and encoding it again cost more than the rest of the
    /// message (and a data event's body went through base64 twice). Each decodes as
    /// ``DaemonMessage/event(_:)`` with the same values as the message ``encode(_:)`` makes
    /// (its keys are not sorted).
    ///
    /// ```swift
    /// let payloads = MessageCoder().encodeEvents(
    ///     [StoredEvent(sequence: 12, taskIdentifier: 3, kindJSON: #"{"type":"completed"}"#)], sessionIdentifier: "com.example.bg")
    /// ```
    public func encodeEvents(_ events: [StoredEvent], sessionIdentifier: String) -> [ByteBuffer] {
        // The session's name as a JSON string once (the encoder's escaping), for every event.
        let session = Self.quoted(sessionIdentifier)
        return events.map { event in
            var text = #"{"type":"event","sequence":"#
            text.reserveCapacity(event.kindJSON.utf8.count + session.utf8.count + 160)
            text += String(event.sequence)
            text += #","sessionIdentifier":"# + session
            if let task = event.taskIdentifier { text += #","taskIdentifier":"# + String(task) }
            text += #","kind":"# + event.kindJSON
            if let storedAt = event.storedAt { text += #","storedAt":"# + Self.seconds(storedAt) }
            if let committedAt = event.committedAt { text += #","committedAt":"# + Self.seconds(committedAt) }
            text += "}"
            return ByteBuffer(string: text)
        }
    }

    /// Seconds since 1970 as JSON reads them back to the same `Date` (Swift's shortest
    /// round-tripping form of the `Double`).
    private static func seconds(_ date: Date) -> String {
        let value = date.timeIntervalSince1970
        return value.isFinite ? "\(value)" : "0"
    }
}
