import FerryProtocol

/// How much of ferryd's stream a background session holds at once, so that a delegate slower
/// than its events costs the app a bounded amount of memory; what waits, waits in ferryd.
///
/// Two bounds, one on each side of the router, each by count and by bytes. ferryd pushes at
/// most ``window`` of the session's messages beyond those the router has taken, and stops
/// while those hold ``byteWindow`` bytes or more (``AttachSession/eventWindow``,
/// ``AttachSession/eventByteWindow``); the router says how many it took every ``reportEvery``
/// messages or ``reportEveryBytes`` of body, whichever comes first. The router takes a message
/// only while fewer than ``inFlightLimit`` events and progress reports, and fewer than
/// ``inFlightByteLimit`` bytes of body, wait on the delegate queue: past that it waits until
/// both are down to half, and a progress report is dropped (the next one carries the totals).
/// So the app holds at most `window + inFlightLimit` messages, and about
/// `byteWindow + inFlightByteLimit` of data tasks' bodies (one event of
/// ``EventKind/maximumDataSize`` may cross each), whatever its delegate's pace.
///
/// ```swift
/// var pacing = DeliveryPacing()
/// if let total = pacing.took(bytes: 262_144) { post(.taken(EventsTaken(sessionIdentifier: id, count: total))) }
/// ```
struct DeliveryPacing {
    static let window = AttachSession.defaultEventWindow
    static let reportEvery = window / 8
    static let byteWindow = AttachSession.defaultEventByteWindow
    /// A quarter of the byte window, as ferryd needs (it waits for the count otherwise).
    static let reportEveryBytes = byteWindow / 4
    static let inFlightLimit = 64
    static let inFlightByteLimit = 4 << 20

    /// Whether the current connection's ferryd paces (protocol 2 on): an older one is told nothing.
    private(set) var paced = false
    /// Messages taken from the current connection and the body bytes they carried, and the
    /// same at the last count ferryd was told.
    private(set) var taken = 0
    private(set) var takenBytes = 0
    private var reported = 0
    private var reportedBytes = 0
    /// Events and progress reports handed to the delegate queue whose callbacks have not all
    /// returned, and the body bytes of those events.
    private(set) var events = 0
    private(set) var progress = 0
    private(set) var eventBytes = 0

    /// One more message taken, carrying `bytes` of body: the running total, when ferryd
    /// should be told.
    mutating func took(bytes: Int = 0) -> Int? {
        taken += 1
        takenBytes += bytes
        guard paced, taken - reported >= Self.reportEvery || takenBytes - reportedBytes >= Self.reportEveryBytes else { return nil }
        reported = taken
        reportedBytes = takenBytes
        return taken
    }

    /// A new connection: ferryd counts from zero on it.
    mutating func connected(paced: Bool) {
        self.paced = paced
        taken = 0
        takenBytes = 0
        reported = 0
        reportedBytes = 0
    }

    var delegateIsBehind: Bool { events + progress >= Self.inFlightLimit || eventBytes >= Self.inFlightByteLimit }

    /// Whether a router that waited may go on: the delegate is down to half the limits, so the
    /// router takes the next messages in a run (woken at every callback's end, it cost two
    /// thread hops per event in a burst).
    var delegateCaughtUp: Bool { events + progress <= Self.inFlightLimit / 2 && eventBytes <= Self.inFlightByteLimit / 2 }

    mutating func eventBegan(bytes: Int) {
        events += 1
        eventBytes += bytes
    }
    mutating func eventEnded(bytes: Int) {
        events -= 1
        eventBytes -= bytes
    }

    /// A progress report may go to the delegate (it is counted), or is dropped (false).
    mutating func progressBegan() -> Bool {
        guard !delegateIsBehind else { return false }
        progress += 1
        return true
    }
    mutating func progressEnded() { progress -= 1 }
}
