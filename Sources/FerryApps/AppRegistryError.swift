/// What went wrong with the installed apps, other than a bad manifest (``AppManifestError``).
///
/// ```swift
/// do { try registry.remove(bundleIdentifier: "com.example.gone") }
/// catch let error as AppRegistryError where error.code == .notInstalled { print(error) }
/// ```
public struct AppRegistryError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable, Equatable {
        /// No manifest with that bundle identifier is installed.
        case notInstalled
        /// The peer's app does not list the group (the platform's `notInAppGroup`).
        case notInAppGroup
        /// A file could not be read or written; the message names it.
        case fileSystem
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
