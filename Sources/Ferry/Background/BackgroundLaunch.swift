import FerryCore
import Foundation
import NIOConcurrencyHelpers

/// Why this process was started, when ferryd started it: the Linux form of
/// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`.
///
/// ferryd runs an app's launch command when events arrive for one of its background sessions
/// and nobody is connected (never the extension: always its containing app). The app
/// recreates the session with the same identifier, receives the stored events, is told
/// `sessionDidFinishEvents(forBackgroundSession:)`, and calls the completion handler; then
/// it may exit.
///
/// ```swift
/// if let launch = BackgroundLaunch.current {
///     let delegate = Uploads(whenDone: launch.completionHandler)   // calls it in sessionDidFinishEvents
///     let session = try Session.background(.background(identifier: launch.sessionIdentifier), delegate: delegate)
///     await launch.waitForCompletionHandler(timeout: .seconds(60))
///     session.finishTasksAndInvalidate()
///     exit(0)
/// }
/// ```
public final class BackgroundLaunch: Sendable {
    /// The environment variable ferryd sets to the session identifier.
    public static let environmentVariable = "FERRY_BACKGROUND_SESSION"

    /// The session whose events this process was started to handle.
    public let sessionIdentifier: String

    private struct State {
        var called = false
        var waiters: [CheckedContinuation<Bool, Never>] = []
    }
    private let state = NIOLockedValueBox(State())

    public init(sessionIdentifier: String) {
        self.sessionIdentifier = sessionIdentifier
    }

    /// The launch ferryd asked for, when this process was started by ferryd (from the
    /// environment); nil when a person or another program started it.
    public static let current: BackgroundLaunch? = {
        guard let identifier = ProcessInfo.processInfo.environment[environmentVariable], !identifier.isEmpty else { return nil }
        return BackgroundLaunch(sessionIdentifier: identifier)
    }()

    /// Call once the session's events are handled (in `sessionDidFinishEvents`).
    public var completionHandler: @Sendable () -> Void {
        { [self] in release(called: true) }
    }

    private func release(called: Bool) {
        let waiters = state.withLockedValue { s -> [CheckedContinuation<Bool, Never>] in
            if called { s.called = true }
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume(returning: called) }
    }

    /// Whether the completion handler was called.
    public var isComplete: Bool { state.withLockedValue { $0.called } }

    /// Waits until the completion handler is called; false when `timeout` passed first.
    @discardableResult
    public func waitForCompletionHandler(timeout: Duration = .seconds(60)) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let done = self.state.withLockedValue { s -> Bool in
                        if s.called { return true }
                        s.waiters.append(continuation)
                        return false
                    }
                    if done { continuation.resume(returning: true) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            if !first { self.release(called: false) }  // ends the other child
            group.cancelAll()
            return first
        }
    }

    // MARK: A running app

    private static let runningAppHandler = SharedCallback<BackgroundLaunch>()

    /// For an app that is running when events arrive for another of its background sessions
    /// (one no process owns): instead of starting a second copy, ferryd tells this process,
    /// and `handler` gets the same ``BackgroundLaunch`` a started app gets from ``current``.
    /// Set it before making any background session: ferryd knows the app runs through them
    /// (a session made earlier does not ask to be told).
    ///
    /// ```swift
    /// BackgroundLaunch.handleEventsWhileRunning { launch in
    ///     Task { try await handleEvents(of: launch) }   // the same code as for `BackgroundLaunch.current`
    /// }
    /// ```
    public static func handleEventsWhileRunning(_ handler: @escaping @Sendable (BackgroundLaunch) -> Void) {
        runningAppHandler.set(handler)
    }

    /// Whether this process asked to be told (its connections say so in their hello).
    static var handlesEventsWhileRunning: Bool { runningAppHandler.isSet }

    /// ferryd said events wait for `sessionIdentifier`.
    static func eventsWaiting(for sessionIdentifier: String) {
        runningAppHandler.call(BackgroundLaunch(sessionIdentifier: sessionIdentifier))
    }
}
