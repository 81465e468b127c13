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

    public init(
        protocolVersion: Int = ProtocolVersion.current,
        minimumProtocolVersion: Int? = nil,
        clientName: String,
        pid: Int32
    ) {
        self.protocolVersion = protocolVersion
        self.minimumProtocolVersion = minimumProtocolVersion
        self.clientName = clientName
        self.pid = pid
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
