import FerryProtocol
import NIOCore

/// How far ferryd may push a paced session's messages ahead of its owner
/// (``AttachSession/eventWindow``): `window` messages beyond what the owner said it took, and,
/// when it asked for one (``AttachSession/eventByteWindow``), fewer than `byteWindow` payload
/// bytes of them (one message may cross it, so a large one always goes).
///
/// Without it, an app whose delegate is slower than its events kept every event ferryd sent
/// in memory; a socket's own back-pressure cannot help, because the app must go on reading
/// it for its requests' answers. Events that find no room wait in the store, and the
/// session's pump sends them as room opens; progress that finds none is dropped. The owner
/// counts messages, not bytes: the sizes of those in flight are kept here, in the order they
/// were counted, and the owner's count says how many of them it took.
///
/// ```swift
/// var pacing = EventPacing(window: 128, byteWindow: 1 << 20)
/// let now = pacing.reserve([300, 300_000, 900_000, 300])   // 3: the third crossed 1 MiB
/// pacing.took(2)                                            // the owner's `taken`: room again
/// ```
struct EventPacing: Sendable {
    let window: Int
    let byteWindow: Int?
    private(set) var sent = 0
    private(set) var taken = 0
    /// Payload bytes sent and not yet taken, and each one's size (only with a byte window).
    private(set) var bytesInFlight = 0
    private var sizesInFlight = CircularBuffer<Int>()

    init(window: Int, byteWindow: Int? = nil) {
        self.window = window
        self.byteWindow = byteWindow
    }

    /// How many more may be sent now, by count.
    var room: Int { window - (sent - taken) }

    /// Whether one more message may go now.
    var hasRoom: Bool { room > 0 && bytesInFlight < (byteWindow ?? .max) }

    /// Counts the messages of `sizes` (payload bytes each), in order, as sent while there is
    /// room; returns how many may go (0 when none).
    mutating func reserve(_ sizes: some Sequence<Int>) -> Int {
        var granted = 0
        for size in sizes {
            guard hasRoom else { break }
            sent += 1
            granted += 1
            if byteWindow != nil {
                bytesInFlight += size
                sizesInFlight.append(size)
            }
        }
        return granted
    }

    /// The last `count` reserved messages did not go (a progress report met a full socket):
    /// the owner will never count them, so they must not keep the room.
    mutating func unreserve(_ count: Int) {
        let returned = min(count, sent - taken)
        sent -= returned
        for _ in 0..<returned { bytesInFlight -= sizesInFlight.popLast() ?? 0 }
    }

    /// The owner took `total` since it attached. A count that goes back (an answer that came
    /// late) changes nothing; one beyond what was sent counts only what was sent.
    mutating func took(_ total: Int) {
        let now = max(taken, min(total, sent))
        for _ in taken..<now { bytesInFlight -= sizesInFlight.popFirst() ?? 0 }
        taken = now
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

    /// This connection owns `session` now, paced by `window` and `byteWindow` (nil: unpaced).
    /// Counts start again: the owner's do too.
    func pace(_ session: String, window: Int?, byteWindow: Int? = nil) {
        let waiting = pacing.withLockedValue { state in
            state.sessions[session] = window.map { EventPacing(window: $0, byteWindow: byteWindow) }
            return state.wake(session)
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Counts `session`'s messages of `sizes` (their payload bytes) as sent, in order, while
    /// there is room; returns how many may go (all of them for an unpaced session, none once
    /// the connection closed).
    func reserveMessages<Sizes: Collection<Int>>(_ sizes: Sizes, of session: String) -> Int {
        pacing.withLockedValue { state in
            if state.closed { return 0 }
            guard state.sessions[session] != nil else { return sizes.count }
            return state.sessions[session]!.reserve(sizes)
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
            return state.sessions[session]!.hasRoom ? state.wake(session) : []
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
                guard let paced = state.sessions[session], !paced.hasRoom else { return .room }
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
                    guard !state.closed, let paced = state.sessions[session], !paced.hasRoom else { return false }
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
