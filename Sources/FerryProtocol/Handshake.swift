/// The client's first message: which protocol versions it speaks and who it is.
///
/// ```swift
/// let hello = Hello(clientName: "ferry-cli", pid: getpid())
/// ```
public struct Hello: Hashable, Sendable, Codable {
    /// The newest protocol version the client speaks.
    public var protocolVersion: Int
    /// The oldest protocol version the client speaks; nil means only ``protocolVersion``.
    public var minimumProtocolVersion: Int?
    /// A name for logs: the executable or app bundle identifier.
    public var clientName: String
    /// The client's process id, for logs. ferryd trusts `SO_PEERCRED`, not this field.
    public var pid: Int32
    /// true: when events wait for another session of this client's app and nobody owns it,
    /// tell this connection (``DaemonMessage/eventsWaiting(sessionIdentifier:)``) instead of
    /// starting the app again. nil or false: never sent.
    public var handlesEventsForOtherSessions: Bool?
    /// true: ask this connection about the authentication challenges of the sessions it owns
    /// (``DaemonMessage/challenge(_:)``). nil or false: ferryd answers them itself, from the
    /// credentials submitted with each task.
    public var answersChallenges: Bool?

    public init(
        protocolVersion: Int = ProtocolVersion.current,
        minimumProtocolVersion: Int? = nil,
        clientName: String,
        pid: Int32,
        handlesEventsForOtherSessions: Bool? = nil,
        answersChallenges: Bool? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.minimumProtocolVersion = minimumProtocolVersion
        self.clientName = clientName
        self.pid = pid
        self.handlesEventsForOtherSessions = handlesEventsForOtherSessions
        self.answersChallenges = answersChallenges
    }
}

/// The daemon's answer to an acceptable hello: the version both sides now speak.
public struct Welcome: Hashable, Sendable, Codable {
    /// The protocol version of every later message on this connection.
    public var protocolVersion: Int
    /// ferryd's own version, for logs and `ferry daemon status`.
    public var daemonVersion: String

    public init(protocolVersion: Int, daemonVersion: String) {
        self.protocolVersion = protocolVersion
        self.daemonVersion = daemonVersion
    }
}
