import Foundation

/// An installed app: the Info.plist and entitlements of the Linux world. Written as JSON,
/// installed with `ferry apps install FILE` (docs/apps.md has the format and an example).
///
/// ```swift
/// let manifest = try AppManifest.decode(from: Data(contentsOf: url))   // checked, field by field
/// print(manifest.bundleIdentifier, manifest.appGroups)
/// ```
public struct AppManifest: Codable, Sendable, Equatable {
    /// Reverse-DNS (`com.example.sharealike`): letters, digits and `-` between dots, at
    /// least two parts, at most 255 characters.
    public var bundleIdentifier: String
    /// What people call the app.
    public var name: String
    /// Absolute paths of the app's programs: a process running one of them is this app.
    public var executables: [String]
    /// The program and arguments ferryd runs to hand the app a session's events;
    /// `{session}` in any argument becomes the session identifier. `launch[0]` is absolute.
    public var launch: [String]
    /// The app groups (`group.…`) whose shared containers the app and its extensions may open.
    public var appGroups: [String]
    /// The app's extensions (share extensions for now).
    public var extensions: [ExtensionManifest]

    public init(
        bundleIdentifier: String, name: String, executables: [String], launch: [String],
        appGroups: [String] = [], extensions: [ExtensionManifest] = []
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.name = name
        self.executables = executables
        self.launch = launch
        self.appGroups = appGroups
        self.extensions = extensions
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case bundleIdentifier, name, executables, launch, appGroups, extensions
    }

    /// `appGroups` and `extensions` may be left out (none).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bundleIdentifier = try container.decode(String.self, forKey: .bundleIdentifier)
        name = try container.decode(String.self, forKey: .name)
        executables = try container.decode([String].self, forKey: .executables)
        launch = try container.decode([String].self, forKey: .launch)
        appGroups = try container.decodeIfPresent([String].self, forKey: .appGroups) ?? []
        extensions = try container.decodeIfPresent([ExtensionManifest].self, forKey: .extensions) ?? []
    }

    /// The extension with this bundle identifier, if the app has it.
    public func appExtension(bundleIdentifier: String) -> ExtensionManifest? {
        extensions.first { $0.bundleIdentifier == bundleIdentifier }
    }
}

/// An app extension, inside its containing app's manifest. Its app groups are its app's;
/// it is never launched by ferryd (events go to the containing app).
public struct ExtensionManifest: Codable, Sendable, Equatable {
    /// The app's bundle identifier + `.` + a name (`com.example.sharealike.share`).
    public var bundleIdentifier: String
    public var name: String
    /// Absolute paths of the extension's programs.
    public var executables: [String]
    /// The extension point; ``knownPoints`` lists those Ferry knows (`share`).
    public var point: String
    /// The background session the extension hands its transfers to, when it has one.
    public var backgroundSessionIdentifier: String?
    /// Kept as written: ShareKit reads the activation rule and the rest.
    public var attributes: JSONValue?

    /// The extension points Ferry knows.
    public static let knownPoints: Set<String> = ["share"]

    public init(
        bundleIdentifier: String, name: String, executables: [String], point: String = "share",
        backgroundSessionIdentifier: String? = nil, attributes: JSONValue? = nil
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.name = name
        self.executables = executables
        self.point = point
        self.backgroundSessionIdentifier = backgroundSessionIdentifier
        self.attributes = attributes
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case bundleIdentifier, name, executables, point, backgroundSessionIdentifier, attributes
    }
}

/// A manifest that cannot be installed: which field, and why.
///
/// ```swift
/// do { _ = try AppManifest.decode(from: data) } catch let error as AppManifestError {
///     print(error)   // extensions[0].point: unknown extension point "today" (known: share)
/// }
/// ```
public struct AppManifestError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The field's path (`executables[1]`, `extensions[0].bundleIdentifier`); empty when the
    /// whole document is wrong (not JSON, not an object).
    public var field: String
    public var reason: String

    public init(field: String, _ reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { field.isEmpty ? reason : "\(field): \(reason)" }
}
