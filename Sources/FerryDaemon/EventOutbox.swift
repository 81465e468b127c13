import FerryProtocol
import FerryStore
import Foundation
import Logging
import Synchronization

/// Events as their commits return, on their way to the sessions' owners without a read of the
/// store: a session whose owner has every earlier event goes *live*, and each commit's events
/// go from the store's writer straight to its connection (written on the connection's event
/// loop), with no hop through the daemon's actor. Before that, while the
/// pump catches up from the store, committed events wait here for it.
///
/// The store stays the truth. Memory counts for a session only once the pump has read the
/// store to its end while memory was already filling (``cover(_:)`` before the read,
/// ``covered(_:through:)`` after it); it is dropped whenever it could miss an event (it grew
/// past its bound, a send failed, the owner left or attached again), and then the pump reads
/// the store, as it always could.
///
/// ```swift
/// store.observeCommittedEvents { outbox.committed($0) }       // on the writer's queue
/// switch outbox.take(session, after: delivered) { … }          // in the pump
/// ```
final class EventOutbox: Sendable {
    private struct Entry {
        /// Every event of the session with a greater sequence is in `events` (nil: not yet
        /// known, the pump's read of the store is under way).
        var complete: Int64?
        var events: [OutgoingEvent] = []
        /// Sending as they commit: to this connection, the last sequence sent being `sent`.
        var live: (connection: ClientConnection, sent: Int64)?

        var bytes: Int { events.reduce(0) { $0 + $1.record.payload.utf8.count } }
    }
    private struct State {
        var entries: [String: Entry] = [:]
        /// The last sequence sent live by sessions that went back to their pump (their
        /// connection had too much to write), until the pump takes it as its cursor. Kept apart
        /// from the entries: an entry dropped for its bound must not lose it.
        var sentLive: [String: Int64] = [:]
        /// Payload bytes held, over every session.
        var bytes = 0
    }
    private let state = Mutex(State())
    /// The most payload bytes held: past it, the session that would grow it reads the store.
    let byteLimit: Int
    /// A live session whose connection has more than this waiting to be written (with the
    /// events at hand) goes back to its pump, which waits for the socket to drain.
    let liveBacklogLimit: Int
    private let logger: Logger

    /// Whether a live commit's `eventsFinished` may go (not while a challenge of the session waits).
    private let finishHold: EventsFinishedHold

    init(byteLimit: Int = 4 << 20, liveBacklogLimit: Int = 2 << 20, finishHold: EventsFinishedHold = EventsFinishedHold(),
         logger: Logger = Logger(label: "ferryd.outbox")) {
        self.finishHold = finishHold
        self.byteLimit = byteLimit
        self.liveBacklogLimit = liveBacklogLimit
        self.logger = logger
    }

    /// The store committed `committed`: the events of a live session are sent now; those of a
    /// session being covered are kept for its pump. Returns the sessions that need their
    /// pump or a launch (every one that is not live), in order of first appearance. Called on
    /// the store's writer queue: it only hands work to event loops.
    func committed(_ committed: CommittedEvents) -> [String] {
        var wake: [String] = []
        // `bytes`: the events' payload bytes, kept as they are added (summed again per event, a
        // commit with hundreds of one session's events added up hundreds of times).
        var sends: [(session: String, connection: ClientConnection, events: [OutgoingEvent], bytes: Int)] = []
        // The sends are queued on their loops before the lock is let go: a drop (the actor's,
        // before it queues an `invalidated` or `attached` reply) then comes before or after
        // both the decision and the queueing, never between them.
        state.withLock { state in
            for record in committed.events {
                let session = record.sessionIdentifier
                guard var entry = state.entries[session] else {
                    if !wake.contains(session) { wake.append(session) }
                    continue
                }
                let size = record.payload.utf8.count
                if let live = entry.live {
                    guard record.sequence > live.sent else { continue }
                    let index = sends.firstIndex { $0.session == session }
                    let queued = index.map { sends[$0].bytes } ?? 0
                    if live.connection.pendingOutboundBytes + queued + size <= liveBacklogLimit,
                        live.connection.reserveMessages(CollectionOfOne(size), of: session) == 1
                    {
                        entry.live?.sent = record.sequence
                        state.entries[session] = entry
                        if let index {
                            sends[index].events.append((record, committed.committedAt))
                            sends[index].bytes += size
                        } else {
                            sends.append((session, live.connection, [(record, committed.committedAt)], size))
                        }
                        continue
                    }
                    // The client reads slower than events come, or has taken too few of them
                    // (its window is full): its pump takes over from here (in slices, waiting
                    // for the socket and the window), from what was sent live.
                    state.sentLive[session] = live.sent
                    entry = Entry(complete: live.sent)
                }
                if !wake.contains(session) { wake.append(session) }
                if state.bytes + size > byteLimit {
                    // Memory goes (what was sent live stays known, in `sentLive`): the pump
                    // reads the store, and this commit's later events are not kept either.
                    Self.drop(session, from: &state)
                    continue
                }
                entry.events.append((record, committed.committedAt))
                state.entries[session] = entry
                state.bytes += size
            }
            for send in sends { sendLive(send.events, of: send.session, to: send.connection) }
        }
        return wake
    }

    /// Makes the messages (their stored JSON spliced in) and writes them in one job on the
    /// connection's event loop (in the order of the commits: each call queues one job there,
    /// and the job writes at once, ahead of anything queued after it), then `eventsFinished`
    /// unless a challenge of the session holds it (``EventsFinishedHold``);
    /// a connection that can no longer take them drops the session's memory (it is closing;
    /// its release follows).
    private func sendLive(_ events: [OutgoingEvent], of session: String, to connection: ClientConnection) {
        connection.channel.eventLoop.execute { [self] in
            var payloads = EventRecord.payloads(events, logger: logger)
            // An event of a kind this build does not know is skipped: the owner will not count it.
            if payloads.count < events.count { connection.unreserveMessages(events.count - payloads.count, of: session) }
            if finishHold.mayFinish(session), let finished = try? MessageCoder().encode(DaemonMessage.eventsFinished(sessionIdentifier: session)) {
                payloads.append(finished)
            }
            if connection.send(encoded: payloads) != payloads.count { drop(session, ifLiveTo: connection) }
        }
    }

    /// What the pump gets from memory. `sent`: the pump's cursor, moved past what was sent
    /// live before the session came back to the pump.
    enum Take {
        /// Memory may not hold every event after `sent`: read the store from there.
        case readStore(sent: Int64)
        /// These events, in order (none: nothing new).
        case events([OutgoingEvent], sent: Int64)
        /// The session is live: its events go as they commit, and the pump has nothing to do.
        case live

        /// The pump's cursor from now on, unless the session is live.
        var sent: Int64? {
            switch self {
            case .readStore(let sent), .events(_, let sent): sent
            case .live: nil
            }
        }
    }

    /// The session's events with a sequence above `after` (the pump's cursor), taken out of memory.
    func take(_ session: String, after: Int64) -> Take {
        state.withLock { state in
            let cursor = max(after, state.sentLive.removeValue(forKey: session) ?? after)
            guard let entry = state.entries[session] else { return .readStore(sent: cursor) }
            if entry.live != nil { return .live }
            guard let complete = entry.complete, cursor >= complete else { return .readStore(sent: cursor) }
            state.entries[session]?.events = []
            state.bytes -= entry.bytes
            return .events(entry.events.filter { $0.record.sequence > cursor }, sent: cursor)
        }
    }

    /// The pump sent everything up to `sent` to `connection`: from now on each commit's events
    /// go to it directly. False when events wait in memory still (the pump takes them first)
    /// or memory is not complete.
    func goLive(_ session: String, to connection: ClientConnection, sent: Int64) -> Bool {
        state.withLock { state in
            guard let entry = state.entries[session], let complete = entry.complete, sent >= complete,
                !entry.events.contains(where: { $0.record.sequence > sent })
            else { return false }
            state.bytes -= entry.bytes
            state.entries[session] = Entry(complete: complete, live: (connection, sent))
            return true
        }
    }

    /// The pump is about to read the session's events from the store: from now on its
    /// committed events are kept (those of the read's snapshot too: the pump skips the ones
    /// it has sent by sequence).
    func cover(_ session: String) {
        state.withLock { state in
            if state.entries[session] == nil { state.entries[session] = Entry() }
        }
    }

    /// The pump's read reached the end of the session's stored events, the last of them
    /// `sequence`: everything after it is in memory now (unless memory was dropped meanwhile).
    func covered(_ session: String, through sequence: Int64) {
        state.withLock { state in
            guard state.entries[session] != nil else { return }
            state.entries[session]?.complete = sequence
        }
    }

    /// Forgets the session (its owner left or attached again, or a read stopped short of the end).
    func drop(_ session: String) {
        state.withLock { state in
            Self.drop(session, from: &state)
            state.sentLive[session] = nil
        }
    }

    /// Forgets the session if it is live to `connection` (a send to it failed).
    private func drop(_ session: String, ifLiveTo connection: ClientConnection) {
        state.withLock { state in
            guard let live = state.entries[session]?.live, live.connection === connection else { return }
            Self.drop(session, from: &state)
        }
    }

    private static func drop(_ session: String, from state: inout State) {
        guard let entry = state.entries.removeValue(forKey: session) else { return }
        state.bytes -= entry.bytes
    }

    /// Sessions held, live ones among them, events and payload bytes, for tests and status.
    var counts: (sessions: Int, live: Int, events: Int, bytes: Int) {
        state.withLock { state in
            (state.entries.count, state.entries.values.filter { $0.live != nil }.count,
             state.entries.values.reduce(0) { $0 + $1.events.count }, state.bytes)
        }
    }
}
