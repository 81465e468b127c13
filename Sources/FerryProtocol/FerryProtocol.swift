// The IPC protocol between the Ferry library and ferryd; see docs/protocol.md.

/// The versions of the Ferry IPC protocol this build speaks, and how two peers agree on one.
///
/// A client opens with ``ClientMessage/hello(_:)`` naming the newest version it speaks (and,
/// optionally, the oldest); ferryd answers ``DaemonMessage/welcome(_:)`` with the highest
/// version both speak, or ``DaemonMessage/refused(_:)`` with ``FerryProtocolError/Code/unsupportedVersion``.
///
/// ```swift
/// let answer = ProtocolVersion.answer(to: hello, daemonVersion: "0.1.0")
/// // .welcome(Welcome(protocolVersion: 2, daemonVersion: "0.1.0")) or .refused(error)
/// ```
public enum ProtocolVersion {
    /// The newest version this build speaks; what ``Hello`` carries by default.
    public static let current = 2
    /// Every version this build speaks.
    public static let supported: ClosedRange<Int> = 1...2
    /// The first version in which an owner may ask for its events to be paced
    /// (``AttachSession/eventWindow``, ``Request/taken(_:)``).
    public static let eventPacing = 2

    /// The daemon's answer to a client's hello: a welcome with the highest version both sides
    /// speak, or a refusal that says which versions each side speaks and what to do.
    public static func answer(
        to hello: Hello,
        daemonVersion: String,
        supported: ClosedRange<Int> = ProtocolVersion.supported
    ) -> DaemonMessage {
        let clientLow = min(hello.minimumProtocolVersion ?? hello.protocolVersion, hello.protocolVersion)
        let clientHigh = hello.protocolVersion
        let chosen = min(clientHigh, supported.upperBound)
        guard chosen >= max(clientLow, supported.lowerBound) else {
            return .refused(.unsupportedVersion(client: clientLow...clientHigh, daemon: supported))
        }
        return .welcome(Welcome(protocolVersion: chosen, daemonVersion: daemonVersion))
    }

    /// The client's reading of the daemon's first message: the agreed version, or the error
    /// that explains why there is none.
    public static func accept(
        _ answer: DaemonMessage,
        supported: ClosedRange<Int> = ProtocolVersion.supported
    ) throws(FerryProtocolError) -> Welcome {
        switch answer {
        case .welcome(let welcome):
            guard supported.contains(welcome.protocolVersion) else {
                throw .unsupportedVersion(
                    client: supported, daemon: welcome.protocolVersion...welcome.protocolVersion)
            }
            return welcome
        case .refused(let error):
            throw error
        default:
            throw FerryProtocolError(
                .handshakeRequired, "ferryd answered the hello with \(answer.typeName) instead of welcome or refused")
        }
    }
}
