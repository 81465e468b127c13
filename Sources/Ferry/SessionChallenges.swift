import FerryEngine
import NIOConcurrencyHelpers

/// The engine's questions about a session's TLS connections (server trust, client
/// certificates), put to the session's delegate on its queue. It holds the session weakly:
/// the engine keeps it as long as a transfer runs, and the session must still go away.
final class SessionChallenges: ConnectionChallengeHandler {
    private struct Served { weak var session: Session? }
    private let served = NIOLockedValueBox(Served())

    func serve(_ session: Session) { served.withLockedValue { $0.session = session } }

    var evaluatesServerTrust: Bool {
        served.withLockedValue { $0.session?.delegate?.evaluatesServerTrust } ?? false
    }

    func connectionDidReceive(challenge: ConnectionChallenge, from observer: (any TransferObserver)?) async -> ConnectionChallengeAnswer {
        guard let session = served.withLockedValue({ $0.session }), let delegate = session.delegate else { return .performDefaultHandling }
        // URLSession's spelling falls back to the task's delegate method, as the platform does.
        if let bridge = delegate as? DelegateBridge {
            return await bridge.session(session, didReceive: challenge, task: (observer as? TaskObserver)?.task)
        }
        return await session.delegateQueue.ask { await delegate.session(session, didReceive: challenge) }
    }
}
