public import Foundation

/// Where ferryd listens and how to start it when it does not answer.
///
/// ```swift
/// let endpoint = DaemonEndpoint(socketPath: "/run/user/1000/ferry/ferryd.sock",
///                               daemonLogPath: "/home/me/.local/share/ferry/logs/ferryd.log")
/// let connection = try await DaemonConnection.open(endpoint, clientName: "my-app")
/// ```
public struct DaemonEndpoint: Sendable {
    /// The Unix socket ferryd listens on.
    public var socketPath: String
    /// Start ferryd when nothing answers (the library's default; `ferry daemon status` does not).
    public var startsDaemon: Bool = true
    /// The ferryd program. nil: `$FERRYD_PATH`, else `ferryd` beside this process's executable,
    /// else the first `ferryd` on `$PATH`.
    public var daemonExecutable: String?
    /// ferryd's stdout and stderr go here when the library starts it.
    public var daemonLogPath: String
    /// Extra environment for a ferryd the library starts (the current environment is passed on).
    public var daemonEnvironment: [String: String] = [:]
    /// How long to wait for a freshly started ferryd to answer.
    public var startTimeout: Duration = .seconds(10)
    /// How long to keep trying while ferryd is busy (its backlog or connection limit full).
    public var busyTimeout: Duration = .seconds(10)
    /// What the connection's hello offers: to be told when events wait for another session of
    /// this app (``Hello/handlesEventsForOtherSessions``).
    public var handlesEventsForOtherSessions = false
    /// Whether the hello offers to answer the authentication challenges of the sessions this
    /// connection owns (``Hello/answersChallenges``).
    public var answersChallenges = false

    public init(socketPath: String, daemonLogPath: String, startsDaemon: Bool = true, daemonExecutable: String? = nil) {
        self.socketPath = socketPath
        self.daemonLogPath = daemonLogPath
        self.startsDaemon = startsDaemon
        self.daemonExecutable = daemonExecutable
    }

    /// The ferryd program this endpoint would start, or nil when there is none.
    public func resolvedDaemonExecutable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let fm = FileManager.default
        if let explicit = daemonExecutable ?? environment["FERRYD_PATH"] {
            return fm.isExecutableFile(atPath: explicit) ? explicit : nil
        }
        if let me = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let sibling = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("ferryd").path
            if fm.isExecutableFile(atPath: sibling) { return sibling }
        }
        for directory in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/ferryd"
            if fm.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
