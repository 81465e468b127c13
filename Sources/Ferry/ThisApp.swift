import FerryApps
import Foundation
import Synchronization

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

/// A value found the first time it is asked for, then kept (a file's place that depends on
/// which app this is: asking `AppRegistry` reads manifests and /proc).
final class FoundOnce<Value: Sendable>: Sendable {
    private let find: @Sendable () -> Value
    private let found = Mutex<Value?>(nil)

    init(_ find: @escaping @Sendable () -> Value) { self.find = find }

    var value: Value {
        found.withLock { found in
            if let found { return found }
            let value = find()
            found = value
            return value
        }
    }
}
