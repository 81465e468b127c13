public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The installed apps: one manifest file each, `<appsDirectory>/<bundle id>.json`, `0600`
/// in a `0700` folder, replaced atomically (a reader sees the old manifest or the new one).
/// Every call reads the folder afresh, so `ferry apps install` takes effect for a running
/// ferryd at its next connection.
///
/// ```swift
/// let registry = AppRegistry(paths: try FerryPaths())
/// let app = try registry.install(manifestAt: URL(fileURLWithPath: "sharealike.json"))
/// let who = try registry.identify(pid: peer.pid)
/// let container = try registry.containerURL(forGroup: "group.com.example.sharealike", for: who)
/// ```
public struct AppRegistry: Sendable {
    public let paths: FerryPaths

    public init(paths: FerryPaths) {
        self.paths = paths
    }

    // MARK: Installing

    /// Reads, checks and installs the manifest at `url`; see ``install(_:)``.
    ///
    /// - Throws: ``AppManifestError`` naming the field; ``AppRegistryError`` (`.fileSystem`)
    ///   when the file cannot be read. Nothing is written then.
    @discardableResult
    public func install(manifestAt url: URL) throws -> AppManifest {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw AppRegistryError(.fileSystem, "cannot read \(url.path): \(Self.reason(error))")
        }
        let manifest = try AppManifest.decode(from: data)
        try install(manifest)
        return manifest
    }

    /// Installs (or replaces, for the same bundle identifier) `manifest` after checking it:
    /// its values (``AppManifest/validate()``), that its programs exist and are executable,
    /// and that no other installed app claims its identifiers or programs (a program must
    /// identify one app). Creates each app group's container `0700` if missing, and links
    /// the group's `UserDefaults(suiteName:)` into it (``GroupDefaults``).
    ///
    /// - Throws: ``AppManifestError`` naming the field; nothing is written then.
    public func install(_ manifest: AppManifest) throws {
        try manifest.validate()
        try manifest.checkFilesExist()
        try withLock {
            try checkConflicts(manifest, with: loadAll().manifests)
            try FerryPaths.makePrivateDirectory(paths.appsDirectory, role: "apps directory", strict: false)
            if !manifest.appGroups.isEmpty {
                try FerryPaths.makePrivateDirectory(paths.groupsDirectory, role: "groups directory", strict: false)
                for group in manifest.appGroups {
                    try FerryPaths.makePrivateDirectory(paths.containerURL(forGroup: group), role: "container of \(group)", strict: false)
                    try GroupDefaults.link(group: group, paths: paths)
                }
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            try AtomicFile.write(try encoder.encode(manifest), to: manifestURL(manifest.bundleIdentifier), mode: 0o600)
        }
    }

    /// Removes the app's manifest: its processes become unregistered. Its group containers
    /// and their files are kept (other apps of the group, or a reinstall, may still need
    /// them); delete them by hand under ``FerryPaths/groupsDirectory`` if you want them gone.
    ///
    /// - Throws: ``AppRegistryError`` `.notInstalled` when no such app is installed.
    public func remove(bundleIdentifier: String) throws {
        guard AppManifest.isReverseDNS(bundleIdentifier, minimumParts: 2) else {
            throw AppRegistryError(.notInstalled, "no app \"\(bundleIdentifier)\" is installed (not a bundle identifier)")
        }
        try withLock {
            let url = manifestURL(bundleIdentifier)
            guard unlink(url.path) == 0 else {
                if errno == ENOENT { throw AppRegistryError(.notInstalled, "no app \(bundleIdentifier) is installed") }
                throw AppRegistryError(.fileSystem, "cannot remove \(url.path): \(String(cString: strerror(errno)))")
            }
            AtomicFile.syncDirectory(paths.appsDirectory)
        }
    }

    // MARK: Reading

    /// The installed apps, by bundle identifier. A damaged manifest file (edited by hand) is
    /// left out; ``damagedManifests()`` names it.
    public func list() throws -> [AppManifest] {
        try loadAll().manifests
    }

    /// Manifest files in the apps directory that cannot be read as a valid manifest, with why.
    public func damagedManifests() throws -> [(file: URL, problem: String)] {
        try loadAll().damaged
    }

    /// The installed app with this bundle identifier, if any.
    public func app(bundleIdentifier: String) throws -> AppManifest? {
        guard AppManifest.isReverseDNS(bundleIdentifier, minimumParts: 2) else { return nil }
        let url = manifestURL(bundleIdentifier)
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        return try? AppManifest.decode(from: data)
    }

    // MARK: Identifying

    /// The app or extension whose `executables` include `executable`, comparing paths with
    /// symlinks resolved on both sides; `.unregistered` otherwise (and for nil).
    public func identify(executable: String?) throws -> PeerIdentity {
        guard let executable else { return .unregistered(executable: nil) }
        let resolved = Self.resolve(executable)
        for app in try list() {
            if app.executables.contains(where: { Self.resolve($0) == resolved }) { return .app(app) }
            if let item = app.extensions.first(where: { $0.executables.contains { Self.resolve($0) == resolved } }) {
                return .appExtension(item, containingApp: app)
            }
        }
        return .unregistered(executable: executable)
    }

    /// The app or extension process `pid` runs, from `/proc/PID/exe`.
    ///
    /// Scripts: when the program is not listed (a script's `/proc/PID/exe` is its
    /// interpreter, `/bin/sh`, `python3`…), the script is looked for in `/proc/PID/cmdline`:
    /// the first argument after the interpreter that does not start with `-` (what the kernel
    /// passes for a `#!` line), resolved against `/proc/PID/cwd` when relative. It identifies
    /// the peer only if it is a listed executable that starts with `#!`, so a listed binary
    /// passed as an argument to another program (`cat /opt/app/bin/app`) does not.
    /// Recognition within one user's processes, not a sandbox: see docs/apps.md.
    public func identify(pid: Int32) throws -> PeerIdentity {
        let executable = executablePath(ofProcess: pid)
        let direct = try identify(executable: executable)
        guard case .unregistered = direct, executable != nil, let arguments = commandLine(ofProcess: pid) else { return direct }
        guard var script = arguments.dropFirst().first(where: { !$0.hasPrefix("-") }) else { return direct }
        if !script.hasPrefix("/") {
            guard let directory = currentDirectory(ofProcess: pid) else { return direct }
            script = directory + "/" + script
        }
        guard Self.isScript(script) else { return direct }
        let viaScript = try identify(executable: script)
        if case .unregistered = viaScript { return direct }
        return viaScript
    }

    /// The container of `group` for a member: the app or extension must belong to the group
    /// (an extension through its app). Created `0700` if missing.
    ///
    /// - Throws: ``AppRegistryError`` `.notInAppGroup` for anyone else, unregistered
    ///   programs included.
    public func containerURL(forGroup group: String, for identity: PeerIdentity) throws -> URL {
        guard identity.appGroups.contains(group) else {
            throw AppRegistryError(.notInAppGroup, "\(identity.logDescription) is not in app group \(group)")
        }
        let url = paths.containerURL(forGroup: group)
        try FerryPaths.makePrivateDirectory(paths.groupsDirectory, role: "groups directory", strict: false)
        try FerryPaths.makePrivateDirectory(url, role: "container of \(group)", strict: false)
        return url
    }

    // MARK: Internals

    func manifestURL(_ bundleIdentifier: String) -> URL {
        paths.appsDirectory.appendingPathComponent(bundleIdentifier + ".json")
    }

    /// Every manifest file, the valid ones sorted by bundle identifier.
    func loadAll() throws -> (manifests: [AppManifest], damaged: [(file: URL, problem: String)]) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: paths.appsDirectory.path)
        } catch CocoaError.fileReadNoSuchFile {
            return ([], [])
        } catch {
            throw AppRegistryError(.fileSystem, "cannot list \(paths.appsDirectory.path): \(Self.reason(error))")
        }
        var manifests: [AppManifest] = []
        var damaged: [(URL, String)] = []
        for name in names.sorted() where name.hasSuffix(".json") && !name.hasPrefix(".") {
            let url = paths.appsDirectory.appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                damaged.append((url, "cannot be read"))
                continue
            }
            do {
                let manifest = try AppManifest.decode(from: data)
                guard name == manifest.bundleIdentifier + ".json" else {
                    damaged.append((url, "holds \(manifest.bundleIdentifier), not the app its name says"))
                    continue
                }
                manifests.append(manifest)
            } catch {
                damaged.append((url, error.description))
            }
        }
        return (manifests.sorted { $0.bundleIdentifier < $1.bundleIdentifier }, damaged)
    }

    /// Another installed app (not an older version of this one) must not use the same
    /// identifiers or programs: identification would be ambiguous.
    func checkConflicts(_ manifest: AppManifest, with installed: [AppManifest]) throws {
        var owners: [String: String] = [:]
        var identifiers: [String: String] = [:]
        for other in installed where other.bundleIdentifier != manifest.bundleIdentifier {
            identifiers[other.bundleIdentifier] = other.bundleIdentifier
            for path in other.executables { owners[Self.resolve(path)] = other.bundleIdentifier }
            for item in other.extensions {
                identifiers[item.bundleIdentifier] = other.bundleIdentifier
                for path in item.executables { owners[Self.resolve(path)] = item.bundleIdentifier }
            }
        }
        if let owner = identifiers[manifest.bundleIdentifier] {
            throw AppManifestError(field: "bundleIdentifier", "\(manifest.bundleIdentifier) is already used by the installed app \(owner)")
        }
        var programs = manifest.executables.enumerated().map { ("executables[\($0)]", $1) }
        for (index, item) in manifest.extensions.enumerated() {
            if let owner = identifiers[item.bundleIdentifier] {
                throw AppManifestError(field: "extensions[\(index)].bundleIdentifier", "\(item.bundleIdentifier) is already used by the installed app \(owner)")
            }
            programs += item.executables.enumerated().map { ("extensions[\(index)].executables[\($0)]", $1) }
        }
        for (field, path) in programs {
            if let owner = owners[Self.resolve(path)] {
                throw AppManifestError(field: field, "\(path) is already the program of \(owner): a program identifies one app")
            }
        }
    }

    /// Serialises installs and removals (two `ferry apps install` at once would each miss
    /// the other's conflicts) with an `flock` on `apps.lock` in the data directory.
    func withLock<T>(_ body: () throws -> T) throws -> T {
        try FerryPaths.makePrivateDirectory(paths.dataDirectory, role: "data directory", strict: false)
        let lockPath = paths.dataDirectory.appendingPathComponent("apps.lock").path
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw AppRegistryError(.fileSystem, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var attempts = 0
        while flock(descriptor, LOCK_EX) != 0 {
            attempts += 1
            guard errno == EINTR, attempts < 1000 else {
                throw AppRegistryError(.fileSystem, "cannot lock \(lockPath): \(String(cString: strerror(errno)))")
            }
        }
        return try body()
    }

    /// The path with symlinks resolved (`realpath`), or as written when it does not exist.
    static func resolve(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return URL(fileURLWithPath: path).standardizedFileURL.path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether the file starts with `#!`.
    static func isScript(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 2)) == Data("#!".utf8)
    }

    static func reason(_ error: any Error) -> String {
        if let cocoa = error as? CocoaError, let underlying = cocoa.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain
        {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return error.localizedDescription
    }
}
