public import Foundation

/// `UserDefaults(suiteName: "group.…")` for an app group, kept in the group's container as on
/// the platform. Foundation on Linux keeps a suite in `<config>/<suite>.plist` (the folder of
/// ``FerryPaths/configDirectory``), read and written by any process of the user; Ferry makes
/// that name a symbolic link to `<container>/Library/Preferences/<group>.plist`, so every
/// member of the group (the app, its extensions) reads and writes the container's file with
/// Foundation's own `UserDefaults`.
///
/// ```swift
/// // in the app and in its extension, once `ferry apps install` has run:
/// let defaults = UserDefaults(suiteName: "group.com.example.sharealike")!
/// defaults.set("https://example.com/bin/42", forKey: "binURL")
/// ```
///
/// `ferry apps install` links each group of the manifest. A suite file already there (used
/// before the app was installed) moves into the container when the container has none; when
/// both exist, the container's is kept and the other is renamed
/// `<group>.plist.before-ferry-<time>`. A symbolic link there that is not a group container's
/// (someone's own) is left alone, and the group's defaults stay where it points.
/// CoreFoundation removes a suite's file when its last key is removed, and so the link:
/// the next write then makes a plain file, until the next `ferry apps install`.
public enum GroupDefaults {
    /// Where the group's defaults live: `<container>/Library/Preferences/<group>.plist`.
    public static func file(forGroup group: String, paths: FerryPaths) -> URL {
        paths.containerURL(forGroup: group).appendingPathComponent("Library/Preferences", isDirectory: true)
            .appendingPathComponent(FerryPaths.fileName(group) + ".plist")
    }

    /// Links Foundation's file of the suite `group` to the container's (made `0700` on the way).
    /// Returns the link, or nil when the defaults' folder is not known
    /// (``FerryPaths/configDirectory``) or a link of the user's own is there.
    @discardableResult
    public static func link(group: String, paths: FerryPaths) throws(AppRegistryError) -> URL? {
        guard let config = paths.configDirectory else { return nil }
        let target = file(forGroup: group, paths: paths)
        let link = config.appendingPathComponent(FerryPaths.fileName(group) + ".plist")
        let fm = FileManager.default
        do {
            try fm.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try fm.createDirectory(at: config, withIntermediateDirectories: true)
            if let existing = try? fm.destinationOfSymbolicLink(atPath: link.path) {
                if existing == target.path { return link }
                // Another data folder's container is replaced; anything else is the user's.
                guard existing.hasSuffix("/Library/Preferences/" + target.lastPathComponent), existing.contains("/groups/") else { return nil }
                try fm.removeItem(at: link)
            } else if fm.fileExists(atPath: link.path) {
                if fm.fileExists(atPath: target.path) {
                    let aside = link.appendingPathExtension("before-ferry-\(Int(Date().timeIntervalSince1970))")
                    try fm.moveItem(at: link, to: aside)
                } else {
                    try fm.moveItem(at: link, to: target)
                }
            }
            try fm.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
            return link
        } catch {
            throw AppRegistryError(.fileSystem, "cannot link the defaults of \(group) at \(link.path) to its container: \(AppRegistry.reason(error))")
        }
    }
}
