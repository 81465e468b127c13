import FerryProtocol

/// How much of ferryd's stream a background session holds at once, so that a delegate slower
/// than its events costs the app a bounded amount of memory; what waits, waits in ferryd.
///
/// Two bounds, one on each side of the router. ferryd pushes at most ``window`` of the
/// session's messages beyond those the router has taken (``AttachSession/eventWindow``; the
/// router says how many it took every ``reportEvery``). The router takes a message only while
/// fewer than ``inFlightLimit`` events and progress reports wait on the delegate queue: past
/// that it waits until half of them have returned, and a progress report is dropped (the next
/// one carries the totals). So the app holds at most `window + inFlightLimit` messages.
///
/// ```swift
/// var pacing = DeliveryPacing()
/// if let total = pacing.took() { post(.taken(EventsTaken(sessionIdentifier: id, count: total))) }
/// ```
struct DeliveryPacing {
    static let window = AttachSession.defaultEventWindow
    static let reportEvery = window / 8
    static let inFlightLimit = 64

    /// Whether the current connection's ferryd paces (protocol 2 on): an older one is told nothing.
    private(set) var paced = false
    /// Messages taken from the current connection, and the last count ferryd was told.
    private(set) var taken = 0
    private var reported = 0
    /// Events and progress reports handed to the delegate queue whose callbacks have not all
    /// returned.
    private(set) var events = 0
    private(set) var progress = 0

    /// One more message taken: the running total, when ferryd should be told.
    mutating func took() -> Int? {
        taken += 1
        guard paced, taken - reported >= Self.reportEvery else { return nil }
        reported = taken
        return taken
    }

    /// A new connection: ferryd counts from zero on it.
    mutating func connected(paced: Bool) {
        self.paced = paced
        taken = 0
        reported = 0
    }

    var delegateIsBehind: Bool { events + progress >= Self.inFlightLimit }

    /// Whether a router that waited may go on: the delegate is down to half the limit, so the
    /// router takes the next messages in a run (woken at every callback's end, it cost two
    /// thread hops per event in a burst).
    var delegateCaughtUp: Bool { events + progress <= Self.inFlightLimit / 2 }

    mutating func eventBegan() { events += 1 }
    mutating func eventEnded() { events -= 1 }

    /// A progress report may go to the delegate (it is counted), or is dropped (false).
    mutating func progressBegan() -> Bool {
        guard !delegateIsBehind else { return false }
        progress += 1
        return true
    }
    mutating func progressEnded() { progress -= 1 }
}
