public import FerryApps
public import Foundation
public import Logging

// FerryApps behind the daemon's small protocols: who a peer is (the app manifests), where
// a group's container is, and how an app is launched.

/// Identifies peers from the installed app manifests (`ferry apps install`).
public struct RegistryApps: PeerIdentifying {
    let registry: AppRegistry
    let logger: Logger

    public init(registry: AppRegistry, logger: Logger) {
        self.registry = registry
        self.logger = logger
    }

    public func identify(pid: Int32) -> PeerApp {
        let identity: PeerIdentity
        do {
            identity = try registry.identify(pid: pid)
        } catch {
            logger.warning("cannot read the app manifests; treating the peer as unregistered", metadata: ["pid": "\(pid)", "error": "\(error)"])
            return .unregistered
        }
        var declared: String?
        if case .appExtension(let item, _) = identity { declared = item.backgroundSessionIdentifier }
        return PeerApp(
            bundleIdentifier: identity.bundleIdentifier, containingApp: identity.containingApp?.bundleIdentifier,
            appGroups: Set(identity.appGroups), isExtension: identity.isExtension, backgroundSessionIdentifier: declared)
    }
}

/// App group containers where FerryApps keeps them (`<data>/groups/<group>`, `0700`);
/// sessions without a group in `<data>/session-files/<session>`.
public struct PathsContainers: ContainerLocating {
    let paths: FerryPaths

    public init(paths: FerryPaths) { self.paths = paths }

    public func containerURL(group: String?, appBundleIdentifier: String, session: String) -> URL {
        if let group { return paths.containerURL(forGroup: group) }
        return DataDirectoryContainers(dataDirectory: paths.dataDirectory)
            .containerURL(group: nil, appBundleIdentifier: appBundleIdentifier, session: session)
    }
}

/// Runs an app's launch command (its manifest's `launch`, `{session}` filled in) detached,
/// with its output in `<data>/logs/<app>.log`.
public struct RegistryLauncher: AppLaunching {
    let registry: AppRegistry
    let launcher: AppLauncher

    public init(registry: AppRegistry, launcher: AppLauncher) {
        self.registry = registry
        self.launcher = launcher
    }

    public func launch(appBundleIdentifier: String, sessionIdentifier: String) async throws {
        guard let app = try registry.app(bundleIdentifier: appBundleIdentifier) else {
            throw DaemonError("no app \(appBundleIdentifier) is installed: `ferry apps install` its manifest")
        }
        try launcher.launch(app, session: sessionIdentifier)
    }
}
