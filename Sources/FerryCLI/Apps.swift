import ArgumentParser
import FerryApps
import Foundation
import ShareKit
#if canImport(Glibc)
import Glibc
#endif

/// `ferry apps`: the installed app manifests (docs/apps.md).
struct Apps: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "Install, list and remove apps: bundle ids, programs, launch command, app groups, extensions.",
        discussion: """
            A manifest is a JSON file (docs/apps.md). Installing it lets ferryd recognise the
            app's and its extensions' processes, open their app groups' shared containers to
            them, and launch the app to deliver its background sessions' events.

            Files: manifests in $FERRY_DATA_DIR/apps (else $XDG_DATA_HOME/ferry/apps, else
            ~/.local/share/ferry/apps); containers in …/groups/<group>, 0700.

            Exit codes: 0 success; 1 a bad manifest (the field is named), an app that is not
            installed, or a file that cannot be written; 2 bad usage; 26 FILE cannot be read.
            """,
        subcommands: [AppsInstall.self, AppsList.self, AppsRemove.self])
}

/// `ferry apps install FILE`.
struct AppsInstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Check a manifest and install it (replacing the same app's); create its group containers.",
        discussion: "A bad manifest is refused with the field that is wrong; nothing is written then.")

    @Argument(help: "The manifest (JSON).") var file: String
    @Flag(name: .long, help: "Print JSON on standard output, for scripts.") var json = false

    struct Installed: Encodable {
        var installed: AppManifest
        var manifest: String
        var containers: [String: String]
        /// Each group's `UserDefaults(suiteName:)` file, in its container (none when the
        /// defaults' folder is not known).
        var defaults: [String: String]
    }

    func run() throws {
        do {
            let registry = AppRegistry(paths: try AppsAccess.paths())
            // Unreadable input is exit 26, as for `ferry put`; the reason is the OS's.
            let descriptor = open(file, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw CLIFailure(exitStatus: ExitStatus.cannotRead, code: "cannotReadFile", message: "cannot read \(file): \(String(cString: strerror(errno)))")
            }
            close(descriptor)
            let manifest = try AppsAccess.run(file: file) { () throws -> AppManifest in
                let manifest = try AppManifest.decode(from: try Data(contentsOf: URL(fileURLWithPath: file)))
                try ShareExtensions.validate(manifest)  // activation rules: ShareKit's, not FerryApps'
                try registry.install(manifest)
                return manifest
            }
            let containers = Dictionary(uniqueKeysWithValues: manifest.appGroups.map { ($0, registry.paths.containerURL(forGroup: $0).path) })
            let defaults = registry.paths.configDirectory == nil ? [:]
                : Dictionary(uniqueKeysWithValues: manifest.appGroups.map { ($0, GroupDefaults.file(forGroup: $0, paths: registry.paths).path) })
            if json {
                let stored = registry.paths.appsDirectory.appendingPathComponent(manifest.bundleIdentifier + ".json").path
                JSONOutput.print(Installed(installed: manifest, manifest: stored, containers: containers, defaults: defaults))
                return
            }
            let extensions = manifest.extensions.count == 1 ? "1 extension" : "\(manifest.extensions.count) extensions"
            Console.out("installed \(manifest.bundleIdentifier) (\(manifest.name)), \(extensions)")
            for group in manifest.appGroups.sorted() {
                Console.out("  app group \(group): \(containers[group] ?? "")")
                if let file = defaults[group] { Console.out("    UserDefaults(suiteName: \"\(group)\"): \(file)") }
            }
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: json)
        }
    }
}

/// `ferry apps list`.
struct AppsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the installed apps with their extensions and app groups.")

    @Flag(name: .long, help: "Print JSON on standard output, for scripts.") var json = false

    struct Listing: Encodable {
        struct Damaged: Encodable {
            var file: String
            var problem: String
        }
        var apps: [AppManifest]
        var damaged: [Damaged]
    }

    func run() throws {
        do {
            let registry = AppRegistry(paths: try AppsAccess.paths())
            let (apps, damaged) = try AppsAccess.run(file: nil) { (try registry.list(), try registry.damagedManifests()) }
            for item in damaged { Console.error("ferry: warning: \(item.file.path) is skipped: \(item.problem)") }
            if json {
                JSONOutput.print(Listing(apps: apps, damaged: damaged.map { .init(file: $0.file.path, problem: $0.problem) }))
                return
            }
            if apps.isEmpty { Console.out("no apps installed") }
            for app in apps {
                let groups = app.appGroups.isEmpty ? "" : "  groups " + app.appGroups.joined(separator: ",")
                Console.out("\(app.bundleIdentifier)  \(app.name)\(groups)")
                Console.out("  launch: \(app.launch.joined(separator: " "))")
                for item in app.extensions {
                    let session = item.backgroundSessionIdentifier.map { "  session \($0)" } ?? ""
                    Console.out("  \(item.point) extension \(item.bundleIdentifier)  \(item.name)\(session)")
                }
            }
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: json)
        }
    }
}

/// `ferry apps remove BUNDLE_ID`.
struct AppsRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove an app's manifest. Its group containers and their files are kept.")

    @Argument(help: "The app's bundle identifier.") var bundleIdentifier: String
    @Flag(name: .long, help: "Print JSON on standard output, for scripts.") var json = false

    struct Removed: Encodable {
        var removed: String
        var keptContainers: [String: String]
    }

    func run() throws {
        do {
            let registry = AppRegistry(paths: try AppsAccess.paths())
            let groups = try AppsAccess.run(file: nil) { () throws -> [String] in
                let groups = try registry.app(bundleIdentifier: bundleIdentifier)?.appGroups ?? []
                try registry.remove(bundleIdentifier: bundleIdentifier)
                return groups
            }
            let kept = Dictionary(uniqueKeysWithValues: groups.map { ($0, registry.paths.containerURL(forGroup: $0).path) })
            if json {
                JSONOutput.print(Removed(removed: bundleIdentifier, keptContainers: kept))
                return
            }
            Console.out("removed \(bundleIdentifier)")
            for group in groups.sorted() { Console.out("  kept the container of \(group): \(kept[group] ?? "")") }
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: json)
        }
    }
}

/// What the `apps` commands share: paths from the environment, FerryApps errors as failures.
enum AppsAccess {
    static func paths() throws -> FerryPaths {
        do {
            return try FerryPaths()
        } catch {
            throw CLIFailure(exitStatus: ExitStatus.failure, code: "badEnvironment", message: "\(error)")
        }
    }

    /// Runs `body`, turning a bad manifest (from `file`), a missing app or a file-system
    /// failure into a ``CLIFailure`` whose message names the field or file.
    static func run<T>(file: String?, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as AppManifestError {
            throw CLIFailure(exitStatus: ExitStatus.failure, code: "invalidManifest", message: (file.map { "\($0): " } ?? "") + error.description)
        } catch let error as AppRegistryError {
            throw CLIFailure(exitStatus: ExitStatus.failure, code: error.code.rawValue, message: error.description)
        } catch let error as FerryPathsError {
            throw CLIFailure(exitStatus: ExitStatus.failure, code: "badDirectory", message: error.description)
        }
    }
}
