public import Ferry
public import Foundation

/// An app group and the background session its app and extension share, as the platform's
/// samples make it: the configuration both create, and files in the group's container.
///
/// ```swift
/// let group = AppGroupSession(appGroup: "group.org.ferry.sharealike", sessionIdentifier: "org.ferry.sharealike.post")
/// let session = URLSession(configuration: group.configuration, delegate: delegate, delegateQueue: nil)
/// ```
public struct AppGroupSession: Sendable {
    public let appGroup: String
    public let sessionIdentifier: String

    public init(appGroup: String, sessionIdentifier: String) {
        self.appGroup = appGroup
        self.sessionIdentifier = sessionIdentifier
    }

    /// A background configuration with the group as its shared container (a new object each
    /// time: the session takes a copy anyway).
    public var configuration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.background(withIdentifier: sessionIdentifier)
        // Extensions have no container of their own: the session works in the group's.
        configuration.sharedContainerIdentifier = appGroup
        return configuration
    }

    /// The group's background session with `delegate`. Throws the reason when ferryd cannot
    /// take it: unreachable, or the session is open in the other program.
    public func makeSession(delegate: any URLSessionDelegate) throws -> URLSession {
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        // Ferry's own check: the platform's session cannot fail to start, ferryd's can.
        if let failure = session.session.backgroundConnectionError { throw failure }
        return session
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
    /// When ferryd started this process for its session's events (Ferry's `BackgroundLaunch`:
    /// the Linux form of `application(_:handleEventsForBackgroundURLSession:completionHandler:)`):
    /// reconnects with a delegate made by `makeDelegate` (given the completion handler to call
    /// in `urlSessionDidFinishEvents(forBackgroundURLSession:)`), waits for that, and exits.
    /// Returns at once when a person started the app.
    public static func handleBackgroundLaunch(
        _ group: AppGroupSession, program: String,
        makeDelegate: (@escaping @Sendable () -> Void) -> any URLSessionDelegate
    ) async {
        guard let launch = BackgroundLaunch.current else { return }
        do {
            let session = try group.makeSession(delegate: makeDelegate(launch.completionHandler))
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

/// How the examples put a transfer's failure into words: a task's `Error` (a `URLError`) in
/// Ferry's names, as their histories and messages always had them.
///
/// ```swift
/// func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
///     record(error.map(TransferFailure.summary))      // "cannotConnectToHost: connection refused"
/// }
/// ```
public enum TransferFailure {
    /// `code: message`, the form the histories keep.
    public static func summary(_ error: any Error) -> String {
        // Ferry's own: the Ferry error behind the URLError, whose code names are finer.
        guard let failure = (error as? URLError)?.ferryError else { return error.localizedDescription }
        return "\(failure.code): \(failure.message)"
    }

    /// Everything said about it (the URL, redacted, and the cause too): for a message.
    public static func details(_ error: any Error) -> String {
        if let failure = (error as? URLError)?.ferryError { return "\(failure)" }
        return "\(error)"
    }
}
