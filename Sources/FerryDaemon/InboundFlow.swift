/// How much of one client's input ferryd has taken on, and whether it reads more.
///
/// ferryd reads a connection only while fewer than `maximumInFlight` of its requests wait to
/// be served and its answers do not fill the socket (NIO's write-buffer high-water mark).
/// Otherwise the read is held: the kernel's socket buffer fills and the client's writes block,
/// so a client that pipelines without reading costs ferryd a bounded amount, not one
/// allocation per request it sent.
///
/// Transitions: `readRequested` holds or passes a read; `arrived` counts requests taken on;
/// `served` and `writabilityChanged` may release a held read (the action says so).
struct InboundFlow: Sendable {
    let maximumInFlight: Int
    private(set) var inFlight = 0
    private var socketWritable = true
    private var readHeld = false

    enum Action: Equatable, Sendable {
        /// Read from the socket now.
        case read
        /// Nothing to do.
        case wait
    }

    init(maximumInFlight: Int) {
        self.maximumInFlight = max(1, maximumInFlight)
    }

    /// Whether more input may be taken on.
    var isOpen: Bool { inFlight < maximumInFlight && socketWritable }

    /// NIO wants to read the socket (after each read, as `autoRead` does).
    mutating func readRequested() -> Action {
        readHeld = !isOpen
        return readHeld ? .wait : .read
    }

    /// `count` requests were decoded and handed to the daemon.
    mutating func arrived(_ count: Int) {
        inFlight += count
    }

    /// `count` requests were answered.
    mutating func served(_ count: Int) -> Action {
        inFlight = max(0, inFlight - count)
        return release()
    }

    /// The socket's write buffer crossed a water mark.
    mutating func writabilityChanged(_ writable: Bool) -> Action {
        socketWritable = writable
        return release()
    }

    private mutating func release() -> Action {
        guard readHeld, isOpen else { return .wait }
        readHeld = false
        return .read
    }
}
