/// The daemon's side of one connection's protocol rules, as a plain value: hello first and
/// once, then requests. It owns no socket; each input returns the action to take.
///
/// Valid transitions:
/// - `awaitingHello` → `established` (an acceptable hello) | `closed` (anything else, or any
///   hello when the connection is `refusing`: the daemon is busy)
/// - `established` → `established` (a request) | `closed` (a second hello, a bad frame)
/// - `closed` → `closed`
///
/// ```swift
/// var connection = ConnectionStateMachine(daemonVersion: "0.1.0")
/// switch connection.received(try coder.decode(ClientMessage.self, from: frame)) {
/// case .reply(let welcome): try await outbound.write(coder.encode(welcome))
/// case .handle(let id, let request): try await handle(id, request)
/// case .close(let last): try await outbound.write(coder.encode(last)); return
/// case .ignore: break
/// }
/// ```
public struct ConnectionStateMachine: Sendable {
    enum State: Sendable, Hashable {
        case awaitingHello
        case established(Hello, Welcome)
        case closed
    }

    /// What the daemon does with an input.
    public enum Action: Hashable, Sendable {
        /// Send this message (a welcome) and go on reading.
        case reply(DaemonMessage)
        /// Serve the request and answer with its id.
        case handle(id: UInt64, Request)
        /// Send this last message (`refused` or `goodbye`), then close the connection.
        case close(DaemonMessage)
        /// The connection is closing: drop the input.
        case ignore
    }

    private var state: State = .awaitingHello
    let daemonVersion: String
    let supported: ClosedRange<Int>
    /// The answer to the hello when the daemon cannot take this connection (`busy`): sent
    /// after the hello was read, so the client reads it instead of a broken pipe.
    let refusing: FerryProtocolError?

    public init(daemonVersion: String, supported: ClosedRange<Int> = ProtocolVersion.supported, refusing: FerryProtocolError? = nil) {
        self.daemonVersion = daemonVersion
        self.supported = supported
        self.refusing = refusing
    }

    /// The client's hello and the version agreed, once the handshake succeeded.
    public var peer: (hello: Hello, welcome: Welcome)? {
        if case .established(let hello, let welcome) = state { return (hello, welcome) }
        return nil
    }

    public var isClosed: Bool { state == .closed }

    /// A message arrived.
    public mutating func received(_ message: ClientMessage) -> Action {
        switch (state, message) {
        case (.closed, _):
            return .ignore
        case (.awaitingHello, .hello(let hello)):
            if let refusing {
                state = .closed
                return .close(.refused(refusing))
            }
            let answer = ProtocolVersion.answer(to: hello, daemonVersion: daemonVersion, supported: supported)
            guard case .welcome(let welcome) = answer else {
                state = .closed
                return .close(answer)
            }
            state = .established(hello, welcome)
            return .reply(answer)
        case (.awaitingHello, .request):
            state = .closed
            return .close(.refused(FerryProtocolError(
                .handshakeRequired, "the first message on a connection must be hello, not \(message.typeName)")))
        case (.established, .hello):
            state = .closed
            return .close(.goodbye(FerryProtocolError(.handshakeRequired, "hello came twice on one connection")))
        case (.established, .request(let id, let request)):
            return .handle(id: id, request)
        }
    }

    /// A frame could not be read or decoded (``FerryProtocolError``): the connection ends with
    /// a `goodbye` (or `refused`, before the handshake) that says why.
    public mutating func failed(_ error: FerryProtocolError) -> Action {
        switch state {
        case .closed:
            return .ignore
        case .awaitingHello:
            state = .closed
            return .close(.refused(error))
        case .established:
            state = .closed
            return .close(.goodbye(error))
        }
    }
}
