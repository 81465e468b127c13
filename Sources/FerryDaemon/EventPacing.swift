import FerryProtocol

/// How far ferryd may push a paced session's messages ahead of its owner
/// (``AttachSession/eventWindow``): `window` beyond what the owner said it took.
///
/// Without it, an app whose delegate is slower than its events kept every event ferryd sent
/// in memory; a socket's own back-pressure cannot help, because the app must go on reading
/// it for its requests' answers. Events that find no room wait in the store, and the
/// session's pump sends them as room opens; progress that finds none is dropped.
///
/// ```swift
/// var pacing = EventPacing(window: 128)
/// let now = pacing.reserve(200)   // 128: send those, the rest waits
/// pacing.took(64)                 // the owner's `taken` request: 64 more may go
/// ```
struct EventPacing: Sendable {
    let window: Int
    private(set) var sent = 0
    private(set) var taken = 0

    init(window: Int) { self.window = window }

    /// How many more may be sent now.
    var room: Int { window - (sent - taken) }

    /// Counts up to `count` messages as sent; returns how many may go (0 when none).
    mutating func reserve(_ count: Int) -> Int {
        let granted = min(count, room)
        sent += granted
        return granted
    }

    /// `count` reserved messages did not go (a progress report met a full socket): the owner
    /// will never count them, so they must not keep the room.
    mutating func unreserve(_ count: Int) {
        sent -= min(count, sent - taken)
    }

    /// The owner took `total` since it attached. A count that goes back (an answer that came
    /// late) changes nothing; one beyond what was sent counts only what was sent.
    mutating func took(_ total: Int) {
        taken = max(taken, min(total, sent))
    }
}

extension ClientConnection {
    /// The pacing of each session this connection owns with a window, and who waits for room.
    struct Pacing {
        var sessions: [String: EventPacing] = [:]
        /// Pumps waiting for room, woken to look again.
        var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]
        var closed = false

        /// The waiters of `session`, taken out (all of them when `session` is nil).
        mutating func wake(_ session: String?) -> [CheckedContinuation<Void, Never>] {
            guard let session else {
                defer { waiters = [:] }
                return waiters.values.flatMap { $0 }
            }
            return waiters.removeValue(forKey: session) ?? []
        }
    }

    /// This connection owns `session` now, paced by `window` (nil: unpaced). Counts start
    /// again: the owner's do too.
    func pace(_ session: String, window: Int?) {
        let waiting = pacing.withLockedValue { state in
            state.sessions[session] = window.map { EventPacing(window: $0) }
            return state.wake(session)
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Counts up to `count` of `session`'s messages as sent; returns how many may go (all of
    /// them for an unpaced session, none once the connection closed).
    func reserveMessages(_ count: Int, of session: String) -> Int {
        pacing.withLockedValue { state in
            if state.closed { return 0 }
            guard state.sessions[session] != nil else { return count }
            return state.sessions[session]!.reserve(count)
        }
    }

    /// `count` of `session`'s reserved messages were not sent after all.
    func unreserveMessages(_ count: Int, of session: String) {
        let waiting = pacing.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            guard state.sessions[session] != nil else { return [] }
            state.sessions[session]!.unreserve(count)
            return state.wake(session)
        }
        for waiter in waiting { waiter.resume() }
    }

    /// The owner's `taken` request: room opens for the session's pump.
    func took(_ total: Int, of session: String) {
        let waiting = pacing.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            guard state.sessions[session] != nil else { return [] }
            state.sessions[session]!.took(total)
            return state.sessions[session]!.room > 0 ? state.wake(session) : []
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Returns once `session` has room for a message (or is unpaced): true; or once the
    /// connection closed: false.
    func roomForMessages(of session: String) async -> Bool {
        while true {
            enum Look { case room, closed, wait }
            let look: Look = pacing.withLockedValue { state in
                if state.closed { return .closed }
                guard let paced = state.sessions[session], paced.room <= 0 else { return .room }
                return .wait
            }
            switch look {
            case .room: return true
            case .closed: return false
            case .wait: break
            }
            // Woken by `took`, `pace` or the close; then looks again (a progress report may
            // have taken the room first).
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let registered = pacing.withLockedValue { state -> Bool in
                    guard !state.closed, let paced = state.sessions[session], paced.room <= 0 else { return false }
                    state.waiters[session, default: []].append(waiter)
                    return true
                }
                if !registered { waiter.resume() }
            }
        }
    }

    /// The connection closes: nobody waits for room any more.
    func endPacing() {
        let waiting = pacing.withLockedValue { state in
            state.closed = true
            return state.wake(nil)
        }
        for waiter in waiting { waiter.resume() }
    }
}
