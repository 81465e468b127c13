import FerryApps
import Foundation

/// This program as the files Ferry keeps for it are named (its cookies, its cache): the bundle
/// identifier its installed manifest gives it (docs/apps.md), or `unregistered.<program>`.
enum ThisApp {
    static func fileName(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let identity = (try? FerryPaths(environment: environment)).flatMap { try? AppRegistry(paths: $0).identify(pid: getpid()) }
        let name = identity?.bundleIdentifier
            ?? "unregistered.\(URL(fileURLWithPath: CommandLine.arguments.first ?? "program").lastPathComponent)"
        return FerryPaths.fileName(name)
    }
}
