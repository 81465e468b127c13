/// An error carried by the protocol: a code to switch on and a sentence for a person.
///
/// The daemon sends it in ``DaemonMessage/failure(id:_:)`` (a request failed),
/// ``DaemonMessage/refused(_:)`` (the handshake failed) and ``DaemonMessage/goodbye(_:)``
/// (the connection is about to close). Decoding and framing throw it too.
///
/// ```swift
/// catch let error as FerryProtocolError where error.code == .backgroundSessionInUseByAnotherProcess {
///     print(error.message)
/// }
/// ```
///
/// Codes are an open set: a code this build does not know decodes as itself, so a newer
/// daemon can add codes without breaking older clients.
public struct FerryProtocolError: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    /// What went wrong. Compare with the static members.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }

        /// The peers share no protocol version.
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
        /// The first message was not a hello, or a hello came twice.
        public static let handshakeRequired = Code(rawValue: "handshakeRequired")
        /// A frame's payload is not valid JSON, or misses or mistypes a field.
        public static let malformedMessage = Code(rawValue: "malformedMessage")
        /// A message, request, reply or event of a `type` this build does not know.
        public static let unknownMessageType = Code(rawValue: "unknownMessageType")
        /// A length prefix larger than the maximum frame size.
        public static let frameTooLarge = Code(rawValue: "frameTooLarge")
        /// The stream ended in the middle of a frame.
        public static let truncatedFrame = Code(rawValue: "truncatedFrame")
        /// A length prefix of zero.
        public static let emptyFrame = Code(rawValue: "emptyFrame")
        /// A request whose fields do not make sense (empty identifier, priority out of range…).
        public static let badRequest = Code(rawValue: "badRequest")
        /// No background session has this identifier.
        public static let unknownSession = Code(rawValue: "unknownSession")
        /// The session has no task with this identifier.
        public static let unknownTask = Code(rawValue: "unknownTask")
        /// Another process owns this background session.
        public static let backgroundSessionInUseByAnotherProcess = Code(
            rawValue: "backgroundSessionInUseByAnotherProcess")
        /// The request needs an owning connection; this one attached to watch only, or not at all.
        public static let notOwner = Code(rawValue: "notOwner")
        /// The peer's app does not belong to the app group it named.
        public static let notInAppGroup = Code(rawValue: "notInAppGroup")
        /// The peer is an extension and the session is not the one its manifest names.
        public static let undeclaredSession = Code(rawValue: "undeclaredSession")
        /// The task cannot do that in its state (resume a completed task…).
        public static let invalidTaskState = Code(rawValue: "invalidTaskState")
        /// No challenge of this session waits for an answer with this identifier (answered
        /// already, or given up when its transfer timed out).
        public static let unknownChallenge = Code(rawValue: "unknownChallenge")
        /// ferryd holds as many connections as it allows: try again shortly (clients do,
        /// with backoff).
        public static let busy = Code(rawValue: "busy")
        /// The connection sent nothing for ferryd's idle time-out and holds no session.
        public static let idleTimeout = Code(rawValue: "idleTimeout")
        /// A download's `deliverTo` cannot be written: its folder is missing or not writable,
        /// or the path is a folder. Nothing was stored.
        public static let cannotWriteToFile = Code(rawValue: "cannotWriteToFile")
        /// The daemon failed on its side (its store, a file); the message says what.
        public static let internalError = Code(rawValue: "internalError")
    }

    public var code: Code
    /// A sentence for a person: what happened and, when there is one, what to do.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// The code alone, for logs: messages can name sessions, paths and URLs.
    public var shortDescription: String { code.rawValue }

    /// The refusal for peers that share no version.
    public static func unsupportedVersion(client: ClosedRange<Int>, daemon: ClosedRange<Int>) -> FerryProtocolError {
        FerryProtocolError(
            .unsupportedVersion,
            "the client speaks protocol version \(client.rendered) and ferryd speaks \(daemon.rendered): "
                + "install matching versions of the library and ferryd (then `ferry daemon stop` to restart it)")
    }
}

extension ClosedRange<Int> {
    var rendered: String { lowerBound == upperBound ? "\(lowerBound)" : "\(lowerBound)–\(upperBound)" }
}
