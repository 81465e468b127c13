import Foundation
import Glibc
import Logging

/// Follows NetworkManager over the system bus on a thread of its own: which devices are
/// metered, read whole when NetworkManager appears, then kept by its `PropertiesChanged`,
/// `DeviceAdded` and `DeviceRemoved` signals; nil while there is no bus or no NetworkManager
/// on it (ferryd then goes by interface names alone). When NetworkManager becomes unavailable
/// after a reading (it restarts, a call goes unanswered, the bus closes the connection), that
/// reading still counts for ``grace`` seconds: a metered link must not count as cheap for the
/// moment of a restart, nor a task start on it then and run to its end. Each change is told
/// through ``changes``, a pipe the network watch polls beside its netlink socket, and read
/// with ``current``.
final class NetworkManagerWatch: Sendable {
    /// Readable when ``current`` changed (and once after the first attempt, whatever it found);
    /// read it empty with ``drainChanges()``. Closed by the thread once stopped.
    let changes: Int32
    private let notify: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let state = LockedDevices()

    static let name = "org.freedesktop.NetworkManager"
    static let root = "/org/freedesktop/NetworkManager"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    /// How long one call may take: connecting and the match rules take at most this together,
    /// and so does each wait for the stop pipe between calls.
    static let callTimeout = 2.0
    /// How long one whole reading (`GetDevices` and every device's properties) may take.
    static let readTimeout = 5.0
    /// The wait before connecting again after the bus failed (1 s, doubling up to this).
    static let retryInterval = 10.0
    /// How long the last reading counts once NetworkManager is unavailable.
    static let grace = 30.0
    /// More devices than this are not read (a bound on one reading's calls).
    static let maximumDevices = 256

    /// What NetworkManager last said; nil when it is not there.
    var current: NetworkManagerDevices? { state.value }

    /// How many times every device was read (for tests: a burst of signals is one reading).
    var readings: Int { state.readings }

    /// Starts following NetworkManager on the bus at `address` (a D-Bus address); its last
    /// reading counts for `grace` seconds once it is unavailable.
    init?(address: String, grace: Double = NetworkManagerWatch.grace, logger: Logger) {
        guard let news = wakeUpPipe() else { return nil }
        guard let stopPipe = wakeUpPipe() else {
            for fd in [news.read, news.write] { Glibc.close(fd) }
            return nil
        }
        (changes, notify) = news
        self.stopPipe = stopPipe
        let thread = Thread { [state, notify, changes, stopPipe] in
            var follower = Follower(address: address, stop: stopPipe.read, grace: grace, logger: logger) { devices in
                guard state.set(devices) else { return }
                var byte: UInt8 = 1
                _ = write(notify, &byte, 1)
            } read: {
                state.countReading()
            }
            follower.run()
            // The thread closes all but the stop pipe's write end: nothing writes to a closed pipe.
            for fd in [stopPipe.read, notify, changes] { Glibc.close(fd) }
        }
        thread.name = "ferryd NetworkManager"
        thread.start()
    }

    /// Empties ``changes`` (a non-blocking pipe), once its news has been taken.
    func drainChanges() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while buffer.withUnsafeMutableBytes({ read(changes, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Ends the thread (within about a call's time-out).
    func stop() {
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    /// Closing the write end also stops the thread (its poll sees the hang-up).
    deinit { Glibc.close(stopPipe.write) }
}

/// Why following NetworkManager on a connection ended.
private enum FollowEnd: Error {
    /// The stop pipe was written (or closed).
    case stopped
    case failed(DBusError)
}

/// The thread's work: connect, read, follow; when the bus fails, connect again (1 s later,
/// doubling up to ``NetworkManagerWatch/retryInterval``), keeping the last reading for the
/// grace period meanwhile.
private struct Follower {
    let address: String
    let stop: Int32
    let grace: Double
    let logger: Logger
    let publish: (NetworkManagerDevices?) -> Void
    /// Called after each whole reading.
    let read: () -> Void
    /// A device's interface name and what NetworkManager says of it, by its object path.
    private typealias Known = (interface: String, device: NetworkManagerDevices.Device)
    /// The reading that counts: nil when there is none (no NetworkManager, or its grace ended).
    private var devices: [String: Known]?
    private var lastProblem = ""
    /// NetworkManager was read on this connection and has not left since.
    private var present = false
    /// While NetworkManager is unavailable, when its last reading stops counting.
    private var graceEnds: Double?
    /// When to read again after NetworkManager answered a read with an error (it owns its name
    /// a moment before it serves its objects, and leaves in the middle of a read) or was still
    /// starting, and the wait after that.
    private var retryAt: Double?
    private var retryDelay = 0.1
    /// The wait before connecting again after the bus failed.
    private var reconnectDelay = 1.0
    /// At most this many messages are handled before the stop pipe is looked at again.
    private static let maximumHandled = 1000

    init(
        address: String, stop: Int32, grace: Double, logger: Logger, publish: @escaping (NetworkManagerDevices?) -> Void,
        read: @escaping () -> Void
    ) {
        (self.address, self.stop, self.grace, self.logger, self.publish, self.read) = (address, stop, grace, logger, publish, read)
    }

    mutating func run() {
        while true {
            do throws(FollowEnd) {
                let bus: DBusConnection
                do {
                    bus = try DBusConnection(address: address, timeout: NetworkManagerWatch.callTimeout)
                } catch {
                    throw .failed(error)
                }
                defer { bus.close() }
                try follow(bus)
            } catch {
                guard case .failed(let error) = error else { return }
                unavailable("no NetworkManager reading (the bus at \(address): \(error))")
            }
            let reconnectAt = DBusConnection.now + reconnectDelay
            reconnectDelay = min(reconnectDelay * 2, NetworkManagerWatch.retryInterval)
            while DBusConnection.now < reconnectAt {
                endGraceIfDue()
                if stopRequested(within: min(reconnectAt, graceEnds ?? reconnectAt) - DBusConnection.now) { return }
            }
        }
    }

    /// Follows NetworkManager on `bus` until asked to stop or the bus fails.
    private mutating func follow(_ bus: DBusConnection) throws(FollowEnd) {
        let sender = "sender='\(NetworkManagerWatch.name)'"
        let deadline = DBusConnection.now + NetworkManagerWatch.callTimeout
        for rule in [
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(NetworkManagerWatch.name)'",
            // arg0: the Device interface's changes only, not Wi-Fi's scans or the statistics'.
            "type='signal',\(sender),interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                + "path_namespace='\(NetworkManagerWatch.root)/Devices',arg0='\(NetworkManagerWatch.deviceInterface)'",
            "type='signal',\(sender),interface='\(NetworkManagerWatch.name)',path='\(NetworkManagerWatch.root)'",
        ] {
            _ = try call(.busCall("AddMatch", [.string(rule)]), on: bus, by: deadline)
        }
        var readingDue = true
        while true {
            // Everything that came is handled before any wait: a reading's calls leave what
            // arrived meanwhile in the connection's queue, where poll does not see it; and a
            // burst of signals that each want a reading gets one, after the last of them.
            var handled = 0
            while handled < Self.maximumHandled, let message = try receive(bus) {
                try handle(message, on: bus, readingDue: &readingDue)
                handled += 1
            }
            if bus.takeDropped() { readingDue = true }
            if let retryAt, retryAt <= DBusConnection.now { readingDue = true }
            if readingDue {
                readingDue = false
                try refresh(bus)
                continue
            }
            endGraceIfDue()
            let wake = [retryAt, graceEnds].compactMap(\.self).min()
            let timeout = handled == Self.maximumHandled ? 0 : wake.map { Int32(max(0, $0 - DBusConnection.now) * 1000) + 1 } ?? -1
            var fds = [pollfd(fd: stop, events: Int16(POLLIN), revents: 0), pollfd(fd: bus.fd, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, timeout)
            if ready < 0, errno != EINTR { throw .failed(.system(call: "poll", errno: errno)) }
            if fds[0].revents != 0 { throw .stopped }
        }
    }

    /// Reads every device, if NetworkManager is on the bus. An error answer from it (not ready
    /// yet, leaving) is tried again after a while (0.1 s, doubling up to 2 s) instead of ending
    /// the connection; so is a NetworkManager still starting while its last reading is kept, as
    /// its devices say nothing of their connections (nor `Metered`) until it has activated them.
    private mutating func refresh(_ bus: DBusConnection) throws(FollowEnd) {
        let deadline = DBusConnection.now + NetworkManagerWatch.readTimeout
        do throws(FollowEnd) {
            _ = try call(.busCall("GetNameOwner", [.string(NetworkManagerWatch.name)]), on: bus, by: deadline)
            if graceEnds != nil, try isStarting(bus, by: deadline) {
                retryLater("NetworkManager is starting")
                return
            }
            try readAll(bus, by: deadline)
            (retryAt, retryDelay, reconnectDelay) = (nil, 0.1, 1)
        } catch .failed(.remote(let name, _)) where name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            reconnectDelay = 1
            unavailable("no NetworkManager on the system bus")
        } catch .failed(.remote(let name, let message)) {
            retryLater("\(name): \(message)")
        }
    }

    private mutating func retryLater(_ why: String) {
        logger.debug("NetworkManager cannot be read yet", metadata: ["why": "\(why)", "retry": "\(retryDelay)"])
        retryAt = DBusConnection.now + retryDelay
        retryDelay = min(retryDelay * 2, 2)
    }

    /// NetworkManager's `Startup`: true until it has tried to activate what it activates at start.
    private func isStarting(_ bus: DBusConnection, by deadline: Double) throws(FollowEnd) -> Bool {
        let answer = try call(
            .call(NetworkManagerWatch.name, path: NetworkManagerWatch.root, interface: "org.freedesktop.DBus.Properties", member: "Get",
                  [.string(NetworkManagerWatch.name), .string("Startup")]),
            on: bus, by: deadline)
        return answer.body.first?.boolean ?? false
    }

    private mutating func handle(_ message: DBusMessage, on bus: DBusConnection, readingDue: inout Bool) throws(FollowEnd) {
        switch (message.kind, message.interface, message.member) {
        case (.methodCall, _, _):
            do { try bus.refuse(message) } catch { throw .failed(error) }
        case (.signal, "org.freedesktop.DBus", "NameOwnerChanged"):
            guard message.body.count == 3, message.body[0].string == NetworkManagerWatch.name else { return }
            if message.body[2].string?.isEmpty == false {
                readingDue = true
            } else {
                readingDue = false
                unavailable("NetworkManager left the system bus")
            }
        case (.signal, NetworkManagerWatch.name, "DeviceAdded"), (.signal, NetworkManagerWatch.name, "DeviceRemoved"):
            readingDue = true
        case (.signal, "org.freedesktop.DBus.Properties", "PropertiesChanged"):
            // Not before NetworkManager is read again: once restarted, its paths name other devices.
            guard present, message.body.count >= 2, message.body[0].string == NetworkManagerWatch.deviceInterface,
                let path = message.path, var updated = devices, updated[path] != nil, let changed = message.body[1].dictionary
            else { return }
            if changed["Interface"] != nil || changed["IpInterface"] != nil || changed["DeviceType"] != nil {
                readingDue = true
                return
            }
            guard let value = changed["Metered"]?.uint32 else { return }
            updated[path]?.device.metered = NetworkManagerDevices.Metered(rawValue: value) ?? .unknown
            keep(updated)
        default:
            break
        }
    }

    /// Reads every device NetworkManager has (`GetDevices`, then each one's properties), all
    /// by `deadline`.
    private mutating func readAll(_ bus: DBusConnection, by deadline: Double) throws(FollowEnd) {
        let reply = try call(
            .call(NetworkManagerWatch.name, path: NetworkManagerWatch.root, interface: NetworkManagerWatch.name, member: "GetDevices"),
            on: bus, by: deadline)
        let paths = (reply.body.first?.elements ?? []).compactMap(\.string).prefix(NetworkManagerWatch.maximumDevices)
        var read: [String: Known] = [:]
        for path in paths {
            let properties: [String: DBusValue]
            do throws(FollowEnd) {
                let answer = try call(
                    .call(NetworkManagerWatch.name, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                          [.string(NetworkManagerWatch.deviceInterface)]),
                    on: bus, by: deadline)
                properties = answer.body.first?.dictionary ?? [:]
            } catch .failed(.remote) {
                continue  // gone since GetDevices: DeviceRemoved follows
            }
            let ipInterface = properties["IpInterface"]?.string ?? ""
            guard let interface = ipInterface.isEmpty ? properties["Interface"]?.string : ipInterface, !interface.isEmpty else { continue }
            let metered = properties["Metered"]?.uint32.flatMap(NetworkManagerDevices.Metered.init) ?? .unknown
            read[path] = (interface, .init(metered: metered, type: properties["DeviceType"]?.uint32 ?? 0))
        }
        self.read()
        if graceEnds != nil { logger.info("NetworkManager is back: its reading counts again") }
        graceEnds = nil
        keep(read)
        if !present {
            logger.notice("NetworkManager: reading which links are metered", metadata: [
                "metered": "\(read.values.filter(\.device.metered.isMetered).map(\.interface).sorted().joined(separator: ","))",
                "devices": "\(read.count)",
            ])
            (present, lastProblem) = (true, "")
        }
    }

    /// Keeps `new` as what NetworkManager says, logs each link whose `Metered` changed (once
    /// NetworkManager was read: its first reading is logged whole) and publishes it.
    private mutating func keep(_ new: [String: Known]) {
        if present {
            for (path, known) in new where devices?[path].map({ $0.device.metered != known.device.metered }) ?? true {
                logger.info("NetworkManager: metered changed", metadata: ["link": "\(known.interface)", "metered": "\(known.device.metered)"])
            }
        }
        devices = new
        publish(NetworkManagerDevices(new.values.map { ($0.interface, $0.device) }))
    }

    /// NetworkManager cannot be read (`why`): its last reading, if any, counts until the grace
    /// period ends (``endGraceIfDue()``); without one, links go by their names at once.
    private mutating func unavailable(_ why: String) {
        (present, retryAt, retryDelay) = (false, nil, 0.1)
        if devices != nil {
            if graceEnds == nil {
                logger.info("\(why): NetworkManager's last reading counts for \(Int(grace)) s more")
                graceEnds = DBusConnection.now + grace
            }
        } else {
            if why != lastProblem { logger.info("\(why): links are classed by their names alone") }
            publish(nil)
        }
        lastProblem = why
    }

    private mutating func endGraceIfDue() {
        guard let graceEnds, graceEnds <= DBusConnection.now else { return }
        self.graceEnds = nil
        devices = nil
        logger.info("\(lastProblem): links are classed by their names alone")
        publish(nil)
    }

    /// `message`'s reply, unless the stop pipe was written: each call waits at most until
    /// `deadline`, so that stopping waits for one call at most.
    private func call(_ message: DBusMessage, on bus: DBusConnection, by deadline: Double) throws(FollowEnd) -> DBusMessage {
        if stopRequested(within: 0) { throw .stopped }
        do {
            return try bus.call(message, timeout: max(0, deadline - DBusConnection.now))
        } catch {
            throw .failed(error)
        }
    }

    private func receive(_ bus: DBusConnection) throws(FollowEnd) -> DBusMessage? {
        do { return try bus.receive(timeout: 0) } catch { throw .failed(error) }
    }

    /// Waits `seconds` for the stop pipe; whether it was written (or closed).
    private func stopRequested(within seconds: Double) -> Bool {
        var fds = [pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        return poll(&fds, 1, Int32(max(0, seconds) * 1000)) > 0
    }
}

/// The last reading, shared by the NetworkManager thread (writer) and the network watch (reader).
private final class LockedDevices: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var devices: NetworkManagerDevices?
    private var published = false
    private var readCount = 0

    var value: NetworkManagerDevices? { lock.withLock { devices } }
    var readings: Int { lock.withLock { readCount } }

    func countReading() { lock.withLock { readCount += 1 } }

    /// Stores `new`; whether it is news (it differs, or it is the first).
    func set(_ new: NetworkManagerDevices?) -> Bool {
        lock.withLock {
            defer { (devices, published) = (new, true) }
            return !published || devices != new
        }
    }
}
