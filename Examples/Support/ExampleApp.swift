public import Ferry
public import Foundation

/// An app group and the background session its app and extension share: the configuration
/// both create, and files in the group's container.
///
/// ```swift
/// let group = AppGroupSession(appGroup: "group.org.ferry.sharealike", sessionIdentifier: "org.ferry.sharealike.post")
/// let session = try Session.background(group.configuration, delegate: delegate)
/// ```
public struct AppGroupSession: Sendable {
    public let appGroup: String
    public let sessionIdentifier: String

    public init(appGroup: String, sessionIdentifier: String) {
        self.appGroup = appGroup
        self.sessionIdentifier = sessionIdentifier
    }

    public var configuration: Configuration {
        var configuration = Configuration.background(identifier: sessionIdentifier)
        configuration.sharedContainerIdentifier = appGroup
        return configuration
    }

    /// The group's shared container, for this program if it is a member.
    public func container() throws -> URL {
        try SharedContainer.url(forSecurityApplicationGroupIdentifier: appGroup)
    }

    /// A file in the container.
    public func file(_ name: String) throws -> URL {
        try container().appendingPathComponent(name)
    }
}

/// What the example apps' `main` has in common: ferryd's relaunch, options, failing with a
/// message.
public enum ExampleApp {
    /// When ferryd started this process for its session's events: reconnects with a delegate
    /// made by `makeDelegate` (given the completion handler to call when the events are
    /// finished), waits for that, and exits. Returns at once when a person started the app.
    public static func handleBackgroundLaunch(
        _ group: AppGroupSession, program: String,
        makeDelegate: (@escaping @Sendable () -> Void) -> any SessionDelegate
    ) async {
        guard let launch = BackgroundLaunch.current else { return }
        do {
            let session = try Session.background(group.configuration, delegate: makeDelegate(launch.completionHandler))
            let finished = await launch.waitForCompletionHandler(timeout: .seconds(120))
            session.finishTasksAndInvalidate()
            exit(finished ? 0 : 3)
        } catch {
            fail(program, "\(error)")
        }
    }

    /// The value after `--name` in `arguments`.
    public static func option(_ name: String, in arguments: [String]) -> String? {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }

    /// Prints `program: message` on standard error and exits with `status`.
    public static func fail(_ program: String, _ message: String, status: Int32 = 1) -> Never {
        FileHandle.standardError.write(Data("\(program): \(message)\n".utf8))
        exit(status)
    }
}
