import FerryApps
public import Foundation

/// What ferryd knows of the app behind a connection, from its pid (the app manifests).
///
/// ```swift
/// let app = PeerApp(bundleIdentifier: "com.example.share", containingApp: "com.example.app", appGroups: ["group.example"])
/// ```
public struct PeerApp: Sendable, Hashable {
    /// The app or extension; nil for a process no manifest names (the CLI, a script).
    public var bundleIdentifier: String?
    /// The app ferryd launches for the sessions this peer owns: the app itself, or an
    /// extension's containing app. nil for an unregistered process (never launched).
    public var containingApp: String?
    /// The app groups the peer's app belongs to.
    public var appGroups: Set<String>
    /// Whether the peer is an extension (it is never launched itself).
    public var isExtension: Bool
    /// An extension's one background session, as its manifest names it: the only session it
    /// may own (nil: it may own none).
    public var backgroundSessionIdentifier: String?

    public init(
        bundleIdentifier: String?, containingApp: String?, appGroups: Set<String> = [], isExtension: Bool = false,
        backgroundSessionIdentifier: String? = nil
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.containingApp = containingApp
        self.appGroups = appGroups
        self.isExtension = isExtension
        self.backgroundSessionIdentifier = backgroundSessionIdentifier
    }

    /// Why this peer may not own `session`, or nil when it may: an extension owns only the
    /// session its manifest names, as each extension of an app has a session of its own.
    public func refusalToOwn(_ session: String) -> String? {
        guard isExtension, backgroundSessionIdentifier != session else { return nil }
        let name = bundleIdentifier ?? "this extension"
        guard let declared = backgroundSessionIdentifier else {
            return "\(name) names no background session in its manifest: add \"backgroundSessionIdentifier\": \"\(session)\" to its extension (ferry apps install)"
        }
        return "\(name) may own only its manifest's background session \(declared), not \(session)"
    }

    /// A process no manifest names: it may own sessions without an app group; nothing is
    /// launched for them.
    public static let unregistered = PeerApp(bundleIdentifier: nil, containingApp: nil)
}

/// Tells ferryd which app a process is (FerryApps' `AppRegistry` in `ferryd`).
public protocol PeerIdentifying: Sendable {
    func identify(pid: Int32) -> PeerApp
}

/// Knows no apps: every peer is unregistered.
public struct NoApps: PeerIdentifying {
    public init() {}
    public func identify(pid: Int32) -> PeerApp { .unregistered }
}

/// Where a session's files live: downloads land there, and a download's `destination` must
/// be inside it.
public protocol ContainerLocating: Sendable {
    /// The container of `group`, or of the app's own sessions when `group` is nil.
    func containerURL(group: String?, appBundleIdentifier: String, session: String) -> URL
}

/// Groups under `<data>/groups/<group>`, sessions without a group under
/// `<data>/session-files/<session>` (where the library also keeps their upload bodies).
public struct DataDirectoryContainers: ContainerLocating {
    public var dataDirectory: URL
    public init(dataDirectory: URL) { self.dataDirectory = dataDirectory }
    public func containerURL(group: String?, appBundleIdentifier: String, session: String) -> URL {
        let paths = FerryPaths(dataDirectory: dataDirectory, runtimeDirectory: dataDirectory)
        if let group { return paths.containerURL(forGroup: group) }
        return paths.sessionFiles(session)
    }
}

/// Starts an app so it can take its session's events (FerryApps' `AppLauncher` in `ferryd`).
public protocol AppLaunching: Sendable {
    /// Starts `appBundleIdentifier` with the session identifier. Returns once started (not
    /// once it connects); throws when it cannot be started.
    func launch(appBundleIdentifier: String, sessionIdentifier: String) async throws
}

/// Launches nothing (tests of other things; a daemon without apps).
public struct NoLauncher: AppLaunching {
    public init() {}
    public func launch(appBundleIdentifier: String, sessionIdentifier: String) async throws {
        throw DaemonError("no app launcher is configured")
    }
}

