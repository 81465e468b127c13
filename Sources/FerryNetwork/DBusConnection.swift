import Glibc

/// A connection to a D-Bus bus over a Unix socket, for one thread: `EXTERNAL` authentication,
/// `Hello`, method calls answered in order of arrival, signals. Blocking with deadlines (each
/// wait is a `poll`), so it belongs on a thread of its own, never on an event loop or Swift
/// concurrency's pool. Bounded: a message longer than `maximumMessageSize` ends the
/// connection, and at most `maximumQueued` messages wait while a call waits for its reply
/// (more are dropped and `takeDropped()` says so, so that the owner reads its state again).
///
/// ```swift
/// let bus = try DBusConnection(address: "unix:path=/run/dbus/system_bus_socket", timeout: 2)
/// defer { bus.close() }
/// let reply = try bus.call(.busCall("GetNameOwner", [.string("org.freedesktop.NetworkManager")]), timeout: 2)
/// ```
package final class DBusConnection {
    /// The socket: readable when a message may have come (for the owner's `poll`).
    let fd: Int32
    /// The name the bus gave this connection (`:1.42`).
    private(set) var uniqueName = ""
    let maximumMessageSize: Int
    let maximumQueued: Int
    /// Messages dropped because the queue was full, since the last `takeDropped()`.
    private var droppedMessages = 0
    private var nextSerial: UInt32 = 1
    private var received: [UInt8] = []
    private var queue: [DBusMessage] = []

    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS`'s default.
    package static let systemBusAddress = "unix:path=/run/dbus/system_bus_socket"

    /// Connects to the first address of `address` that answers, authenticates as this
    /// process's user and says `Hello`, all within `timeout` seconds.
    init(address: String, timeout: Double, maximumMessageSize: Int = 1 << 20, maximumQueued: Int = 256) throws(DBusError) {
        self.maximumMessageSize = maximumMessageSize
        self.maximumQueued = maximumQueued
        let deadline = Self.now + timeout
        var failure = DBusError.address("no unix:path= or unix:abstract= address in '\(address)'")
        var connected: Int32 = -1
        for candidate in address.split(separator: ";") {
            guard let socketAddress = try? Self.socketAddress(String(candidate)) else { continue }
            do {
                connected = try Self.connect(socketAddress, deadline: deadline)
                break
            } catch {
                failure = error
            }
        }
        guard connected >= 0 else { throw failure }
        fd = connected
        do throws(DBusError) {
            try authenticate(deadline: deadline)
            let hello = try call(.busCall("Hello"), timeout: max(0, deadline - Self.now))
            guard let name = hello.body.first?.string else { throw DBusError.protocolViolation("Hello answered without a name") }
            uniqueName = name
        } catch {
            close()
            throw error
        }
    }

    func close() { Glibc.close(fd) }

    /// Sends `message` (a fresh serial is given to it); its serial.
    @discardableResult
    func send(_ message: DBusMessage) throws(DBusError) -> UInt32 {
        let serial = nextSerial
        nextSerial = nextSerial == UInt32.max ? 1 : nextSerial + 1
        try write(try message.encoded(serial: serial), deadline: Self.now + 5)
        return serial
    }

    /// Sends a method call and waits (at most `timeout` seconds) for its reply; an error reply
    /// is thrown as ``DBusError/remote(name:message:)``. What arrives meanwhile waits for `receive`.
    func call(_ message: DBusMessage, timeout: Double) throws(DBusError) -> DBusMessage {
        let what = "\(message.interface ?? "").\(message.member ?? "") on \(message.destination ?? "the bus")"
        let serial = try send(message)
        let deadline = Self.now + timeout
        while true {
            // Checked each turn, not only when a wait ends empty: messages arriving steadily
            // (a flood of signals) would otherwise keep a call waiting past its deadline.
            guard Self.now < deadline, let next = try nextMessage(deadline: deadline) else { throw .timedOut(what) }
            if next.replySerial == serial, next.kind == .methodReturn || next.kind == .error {
                if next.kind == .error { throw next.remoteError }
                return next
            }
            if queue.count < maximumQueued { queue.append(next) } else { droppedMessages += 1 }
        }
    }

    /// The next message: one that waited, else one read within `timeout` seconds (0: only what
    /// is already there); nil when none came.
    func receive(timeout: Double) throws(DBusError) -> DBusMessage? {
        if !queue.isEmpty { return queue.removeFirst() }
        return try nextMessage(deadline: Self.now + timeout)
    }

    /// Whether messages were dropped since the last time it was asked.
    func takeDropped() -> Bool {
        defer { droppedMessages = 0 }
        return droppedMessages > 0
    }

    /// Answers a method call sent to this connection with an error (ferryd serves nothing).
    func refuse(_ call: DBusMessage) throws(DBusError) {
        guard call.kind == .methodCall, call.flags & DBusMessage.noReplyExpected == 0 else { return }
        try send(DBusMessage(
            kind: .error, errorName: "org.freedesktop.DBus.Error.UnknownMethod", replySerial: call.serial, destination: call.sender,
            body: [.string("ferryd serves no D-Bus methods")]))
    }

    // MARK: Reading and writing

    private func nextMessage(deadline: Double) throws(DBusError) -> DBusMessage? {
        while true {
            if received.count >= 16 {
                let length = try DBusMessage.length(prefix: received[0..<16])
                guard length <= maximumMessageSize else { throw .messageTooLarge(length: length, limit: maximumMessageSize) }
                if received.count >= length {
                    let bytes = Array(received[0..<length])
                    received.removeFirst(length)
                    let message = try DBusMessage.decode(bytes)
                    if Self.isNameNews(message) { continue }
                    return message
                }
            }
            guard try fill(deadline: deadline) else { return nil }
        }
    }

    /// The bus's `NameAcquired` and `NameLost`, sent to a connection whether it asked or not:
    /// dropped, as `RequestName`'s reply says the same.
    private static func isNameNews(_ message: DBusMessage) -> Bool {
        message.kind == .signal && message.sender == "org.freedesktop.DBus" && message.interface == "org.freedesktop.DBus"
            && (message.member == "NameAcquired" || message.member == "NameLost")
    }

    /// Reads what the socket has, waiting until `deadline`; false when nothing came in time.
    private func fill(deadline: Double) throws(DBusError) -> Bool {
        guard try wait(for: Int16(POLLIN), deadline: deadline) else { return false }
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count == 0 { throw .closed }
        if count < 0 {
            if errno == EAGAIN || errno == EINTR { return true }
            throw .system(call: "recv", errno: errno)
        }
        received.append(contentsOf: chunk[0..<count])
        return true
    }

    private func write(_ bytes: [UInt8], deadline: Double) throws(DBusError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if sent > 0 {
                offset += sent
            } else if sent < 0, errno == EAGAIN || errno == EINTR {
                guard try wait(for: Int16(POLLOUT), deadline: deadline) else { throw .timedOut("sending a message") }
            } else {
                throw .system(call: "send", errno: errno)
            }
        }
    }

    /// Waits until the socket is ready for `events` or `deadline` passed (then false).
    private func wait(for events: Int16, deadline: Double) throws(DBusError) -> Bool {
        while true {
            var pollFD = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&pollFD, 1, Int32(max(0, min(deadline - Self.now, 3600)) * 1000))
            if ready > 0 { return true }
            if ready == 0 { return false }
            if errno != EINTR { throw .system(call: "poll", errno: errno) }
        }
    }

    // MARK: Connecting

    /// `EXTERNAL` with this process's uid (the bus checks it with `SO_PEERCRED`), no file
    /// descriptors asked for; then `BEGIN`, after which messages flow.
    private func authenticate(deadline: Double) throws(DBusError) {
        let uid = String(getuid()).utf8.map { String($0, radix: 16) }.joined()  // digits: 0x30…0x39, two hex digits each
        try write([0] + Array("AUTH EXTERNAL \(uid)\r\n".utf8), deadline: deadline)
        var line: [UInt8] = []
        while !(line.count >= 2 && line.suffix(2) == [13, 10]) {
            guard line.count < 512 else { throw .authentication("an answer longer than 512 bytes") }
            if received.isEmpty, !(try fill(deadline: deadline)) { throw .timedOut("authentication") }
            line.append(received.removeFirst())
        }
        let answer = String(decoding: line.dropLast(2), as: UTF8.self)
        guard answer.hasPrefix("OK ") else { throw .authentication("the bus answered '\(answer.prefix(100))' to EXTERNAL as uid \(getuid())") }
        try write(Array("BEGIN\r\n".utf8), deadline: deadline)
    }

    private static func connect(_ address: SocketAddress, deadline: Double) throws(DBusError) -> Int32 {
        // A blocking socket (reads and writes pass MSG_DONTWAIT); connect waits at most SO_SNDTIMEO.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket(AF_UNIX)", errno: errno) }
        let seconds = max(0.01, deadline - now)
        var limit = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var socketAddress = address.address
        let result = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        var none = timeval()
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        if result != 0 {
            let code = errno
            Glibc.close(fd)
            throw .system(call: "connect", errno: code)
        }
        return fd
    }

    /// A Unix socket's address and the length `connect` is given: an abstract name's bytes are
    /// all of it, trailing zeros included, so its length is exact (the whole `sockaddr_un` would
    /// name another socket, padded with zeros); a path ends at its zero, so any length will do.
    struct SocketAddress {
        var address: sockaddr_un
        var length: socklen_t
    }

    /// `unix:path=/run/dbus/system_bus_socket` or `unix:abstract=name`, values %-escaped.
    static func socketAddress(_ address: String) throws(DBusError) -> SocketAddress {
        guard address.hasPrefix("unix:") else { throw .address("'\(address)' is not a unix: address") }
        var path: [UInt8]?
        var isAbstract = false
        for pair in address.dropFirst(5).split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = unescape(parts[1]) else { throw .address("'\(address)': '\(pair)'") }
            if parts[0] == "path" { (path, isAbstract) = (value, false) }
            if parts[0] == "abstract" { (path, isAbstract) = ([0] + value, true) }
        }
        guard let path, !path.isEmpty else { throw .address("'\(address)' names no path") }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        guard path.count < MemoryLayout.size(ofValue: socketAddress.sun_path) else { throw .address("'\(address)': path too long") }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: path) }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? MemoryLayout<sa_family_t>.size
        let length = isAbstract ? pathOffset + path.count : MemoryLayout<sockaddr_un>.size
        return SocketAddress(address: socketAddress, length: socklen_t(length))
    }

    private static func unescape(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = utf8.next(), let low = utf8.next(), let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(value)
        }
        return bytes
    }

    /// Monotonic seconds, for deadlines.
    static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
