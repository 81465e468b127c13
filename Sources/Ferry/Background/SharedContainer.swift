import FerryApps
public import FerryEngine
public import Foundation

/// App groups' shared containers: the `containerURL(forSecurityApplicationGroupIdentifier:)`
/// of Ferry. A directory per group under Ferry's data directory, `0700`, given only to
/// programs whose installed app manifest (`ferry apps install`) names the group — the app
/// and its extensions.
///
/// ```swift
/// let container = try SharedContainer.url(forSecurityApplicationGroupIdentifier: "group.com.example.sharealike")
/// try photo.write(to: container.appendingPathComponent("pending.jpg"))
/// ```
public enum SharedContainer {
    /// - Parameter environment: where Ferry's folders are (as ``Configuration/ferryEnvironment``);
    ///   nil, the process's environment.
    public static func url(forSecurityApplicationGroupIdentifier group: String, environment: [String: String]? = nil) throws(FerryError) -> URL {
        do {
            let paths = try FerryPaths(environment: environment ?? ProcessInfo.processInfo.environment)
            let registry = AppRegistry(paths: paths)
            let url = try registry.containerURL(forGroup: group, for: try registry.identify(pid: getpid()))
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            return url
        } catch {
            throw FerryError(
                .backgroundSessionRequiresSharedContainer,
                "no shared container \(group) for this program: \(error)", underlying: error)
        }
    }
}
