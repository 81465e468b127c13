/// What went wrong in ShareKit, with the file it concerns when there is one.
///
/// ```swift
/// do { _ = try TypeIdentifier.detect(fileAt: URL(fileURLWithPath: "/tmp/gone.jpg")) }
/// catch let error as ShareKitError where error.code == .fileNotFound {
///     print(error)   // /tmp/gone.jpg: no such file
/// }
/// ```
public struct ShareKitError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, for code that reacts to it; the message is for people.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileNotFound = "file not found"
            case unreadable = "unreadable"
            case notAnImage = "not an image"
            case library = "library failure"
            case other = "other"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file is not there (or a directory on its path is missing).
        public static let fileNotFound = Code(.fileNotFound)
        /// The file is there but cannot be read (permissions, a directory, an I/O error).
        public static let unreadable = Code(.unreadable)
        /// Image details were asked of something that is not an image libvips reads.
        public static let notAnImage = Code(.notAnImage)
        /// libmagic or libvips could not start or answer.
        public static let library = Code(.library)
        /// Anything else (the message says what).
        public static let other = Code(.other)

        public var description: String { base.rawValue }
    }

    public var code: Code
    /// Says what happened and, where it helps, what to do; names the file when there is one.
    public var message: String
    /// The file concerned, when there is one.
    public var path: String?

    /// An error whose message already says everything (`ShareKitError("cannot read …")`).
    public init(_ message: String, code: Code = .other, path: String? = nil) {
        self.message = message
        self.code = code
        self.path = path
    }

    public var description: String { message }
}
