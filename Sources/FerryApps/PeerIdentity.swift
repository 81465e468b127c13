/// Which app a process is, from its executable and the installed manifests.
///
/// ```swift
/// switch try registry.identify(pid: peer.pid) {
/// case .app(let app): print("the app", app.bundleIdentifier)
/// case .appExtension(let item, let app): print(item.name, "inside", app.name)
/// case .unregistered(let executable): print("not an app:", executable ?? "?")
/// }
/// ```
public enum PeerIdentity: Sendable, Equatable {
    /// One of the app's `executables`.
    case app(AppManifest)
    /// One of an extension's `executables`; `containingApp` is the app ferryd launches for it.
    case appExtension(ExtensionManifest, containingApp: AppManifest)
    /// No manifest names the program: the `ferry` CLI, a script, an unknown program. It may
    /// use sessions without an app group; nothing is ever launched for it.
    case unregistered(executable: String?)

    /// The groups whose containers the peer may open: an extension's are its app's.
    public var appGroups: [String] {
        containingApp?.appGroups ?? []
    }

    /// The app itself, or an extension's containing app; nil when unregistered.
    public var containingApp: AppManifest? {
        switch self {
        case .app(let app): app
        case .appExtension(_, let app): app
        case .unregistered: nil
        }
    }

    /// The app's or extension's bundle identifier; nil when unregistered.
    public var bundleIdentifier: String? {
        switch self {
        case .app(let app): app.bundleIdentifier
        case .appExtension(let item, _): item.bundleIdentifier
        case .unregistered: nil
        }
    }

    /// Whether the peer is an extension (never launched: its app is).
    public var isExtension: Bool {
        if case .appExtension = self { return true }
        return false
    }

    /// For logs: the bundle identifier, or the program of an unregistered peer.
    public var logDescription: String {
        switch self {
        case .app(let app): app.bundleIdentifier
        case .appExtension(let item, _): item.bundleIdentifier
        case .unregistered(let executable): "unregistered (\(executable ?? "unknown program"))"
        }
    }
}
