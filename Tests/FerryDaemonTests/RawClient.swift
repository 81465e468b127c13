// A protocol client on a plain blocking socket, as a test speaks to ferryd: frames by hand,
// so tests can also send what no well-behaved client would. Blocking calls run on a
// Dispatch queue, never on the cooperative pool the in-process daemon needs.
import Dispatch
import FerryProtocol
import FerryTestSupport
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

final class RawClient: @unchecked Sendable {  // one test drives it at a time; the fd is only closed once
    let fd: Int32
    private var buffer = ByteBuffer()
    private let queue = DispatchQueue(label: "raw-client")
    private var nextID: UInt64 = 0
    /// Messages read while waiting for something else (events, progress), in order.
    private(set) var pushed: [DaemonMessage] = []

    init(socketPath: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            closed = true
            throw TestFailure("socket() failed")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(socketPath.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            // A throwing init of a class still runs deinit: mark the descriptor closed here,
            // or deinit would close it again, and by then the number may be someone else's.
            closed = true
            Glibc.close(fd)
            throw TestFailure("connect(\(socketPath)) failed: \(String(cString: strerror(errno)))")
        }
    }

    private var closed = false

    deinit { if !closed { Glibc.close(fd) } }

    /// Closes the socket now, as a process that exits.
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Connects, says hello and checks the welcome.
    static func connected(to socketPath: String, name: String = "test-client") async throws -> RawClient {
        let client = try RawClient(socketPath: socketPath)
        try await client.send(.hello(Hello(clientName: name, pid: getpid())))
        let answer = try await client.next()
        guard case .welcome = answer else { throw TestFailure("expected welcome, got \(answer)") }
        return client
    }

    // MARK: Bytes

    func sendBytes(_ bytes: [UInt8]) async throws {
        let fd = fd
        try await onQueue {
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n < 0 { throw TestFailure("write failed: \(String(cString: strerror(errno)))") }
                sent += n
            }
        }
    }

    func send(_ message: ClientMessage) async throws {
        let frame = try FrameEncoder.frame(try MessageCoder().encode(message))
        try await sendBytes(Array(frame.readableBytesView))
    }

    /// Sends a request and returns its reply (or throws the failure), keeping pushes aside.
    @discardableResult
    func request(_ request: FerryProtocol.Request, timeout: Double = 20) async throws -> Reply {
        nextID += 1
        let id = nextID
        try await send(.request(id: id, request))
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let message = try await next(timeout: max(0.1, deadline.timeIntervalSinceNow))
            switch message {
            case .reply(id, let reply): return reply
            case .failure(id, let error): throw error
            default: pushed.append(message)
            }
        }
    }

    /// The next message the daemon sends; throws on EOF or after `timeout` seconds.
    func next(timeout: Double = 20) async throws -> DaemonMessage {
        if let payload = try nextFrame() { return try MessageCoder().decode(DaemonMessage.self, from: payload) }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestFailure("no message from ferryd within \(timeout) s") }
            let chunk = try await readSome(timeout: left)
            guard let chunk else { throw ClosedByDaemon() }
            buffer.writeBytes(chunk)
            if let payload = try nextFrame() { return try MessageCoder().decode(DaemonMessage.self, from: payload) }
        }
    }

    /// The next pushed message (event, progress, eventsFinished, goodbye): first those kept
    /// aside by `request`, then new ones.
    func nextPush(timeout: Double = 20) async throws -> DaemonMessage {
        if !pushed.isEmpty { return pushed.removeFirst() }
        return try await next(timeout: timeout)
    }

    /// Pushes until `stop` says so, at most `timeout` seconds.
    func pushes(timeout: Double = 30, until stop: (DaemonMessage) -> Bool) async throws -> [DaemonMessage] {
        var seen: [DaemonMessage] = []
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let message = try await nextPush(timeout: max(0.1, deadline.timeIntervalSinceNow))
            seen.append(message)
            if stop(message) { return seen }
        }
    }

    /// Whether the daemon closed the connection within `timeout` (reading and dropping
    /// whatever comes first); the messages read on the way are returned.
    func waitForClose(timeout: Double = 10) async throws -> (closed: Bool, messages: [DaemonMessage]) {
        var messages: [DaemonMessage] = []
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            do {
                messages.append(try await next(timeout: max(0.1, deadline.timeIntervalSinceNow)))
            } catch is ClosedByDaemon {
                return (true, messages)
            } catch let error as FerryProtocolError {
                throw error
            } catch {
                return (false, messages)
            }
        }
        return (false, messages)
    }

    /// Writes `frame` again and again without reading, until the socket takes no more for
    /// `blockedFor` seconds or `limit` frames went out. Returns the whole frames written and
    /// whether the writes blocked.
    func sendWithoutReading(_ frame: [UInt8], limit: Int, blockedFor: Double) async throws -> (frames: Int, blocked: Bool) {
        let fd = fd
        return try await onQueue {
            var bytes = 0
            var offset = 0
            while bytes / frame.count < limit {
                let n = frame[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
                if n > 0 {
                    bytes += n
                    offset = (offset + n) % frame.count
                    continue
                }
                guard errno == EAGAIN || errno == EWOULDBLOCK else {
                    throw TestFailure("send failed: \(String(cString: strerror(errno)))")
                }
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                if poll(&poller, 1, Int32(blockedFor * 1000)) == 0 { return (bytes / frame.count, true) }
            }
            return (bytes / frame.count, false)
        }
    }

    private func nextFrame() throws -> ByteBuffer? {
        try FrameDecoder.nextFrame(from: &buffer)
    }

    private func readSome(timeout: Double) async throws -> [UInt8]? {
        let fd = fd
        return try await onQueue {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(timeout, 60) * 1000))
            if ready == 0 { return [] }
            var bytes = [UInt8](repeating: 0, count: 65536)
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == ECONNRESET { return nil }
                throw TestFailure("read failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return nil }
            return Array(bytes.prefix(n))
        }
    }

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}

struct ClosedByDaemon: Error {}

extension FerryProtocol.Request {
    static func attach(_ session: String, owner: Bool = true, group: String? = nil, perHost: Int? = nil) -> Self {
        .attach(AttachSession(sessionIdentifier: session, sharedContainerIdentifier: group, owner: owner, httpMaximumConnectionsPerHost: perHost))
    }
}

extension DaemonMessage {
    var event: Event? {
        if case .event(let event) = self { return event }
        return nil
    }
    var isEventsFinished: Bool {
        if case .eventsFinished = self { return true }
        return false
    }
}
