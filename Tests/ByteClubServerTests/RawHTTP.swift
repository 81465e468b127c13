import FerryTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking HTTP/1.1 connection over a plain socket, for what a normal client will not do:
/// send half a body and vanish, read `104` informational answers, send raw bytes in a path.
/// Every read has a timeout, so no test can hang on it.
final class RawHTTP: @unchecked Sendable {  // used by one test task at a time
    private let fd: Int32
    private var pending: [UInt8] = []
    /// A serial queue of its own: it runs on an overcommitting thread, whereas the global
    /// concurrent queue shares its (CPU-sized) thread pool with Swift concurrency on Linux.
    private let blockingCalls = DispatchQueue(label: "RawHTTP.blocking")

    init(port: Int, timeoutSeconds: Int = 30) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = withLoopbackAddress(port: port) { connect(fd, $0, $1) }
        guard result == 0 else {
            close(fd)
            throw TestFailure("connect failed: \(errno)")
        }
    }

    deinit { close(fd) }

    /// Goes away as a client that gave up would: both directions shut (a FIN to the server);
    /// the descriptor itself is closed by `deinit`.
    func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

    private func sendBlocking(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send failed: \(errno)") }
            offset += n
        }
    }

    /// Blocking socket calls run on the connection's own queue, never on the cooperative pool,
    /// which the in-process server needs (this machine may have only two of its threads). The
    /// CI run of 2026-11-25 stalled every test for 30 s when two of these calls ran on
    /// `DispatchQueue.global()` while the server waited for a thread.
    private func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            blockingCalls.async { continuation.resume(with: Result { try work() }) }
        }
    }

    func send(_ bytes: [UInt8]) async throws { try await offPool { try self.sendBlocking(bytes) } }
    func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    /// Sends a request head.
    func head(_ method: String, _ target: String, _ headers: [(String, String)]) async throws {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        try await send(text + "\r\n")
    }

    struct Response: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Reads one response head (an informational one too); reads the body by Content-Length
    /// unless the status has none.
    func readResponse(method: String = "GET") async throws -> Response {
        try await offPool { try self.readResponseBlocking(method: method) }
    }

    private func readResponseBlocking(method: String) throws -> Response {
        while findBytes(Array("\r\n\r\n".utf8), in: pending) == nil {
            try fill()
        }
        let end = findBytes(Array("\r\n\r\n".utf8), in: pending)!
        let headText = String(decoding: pending[..<end], as: UTF8.self)
        pending.removeFirst(end + 4)
        let lines = headText.components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw TestFailure("not an HTTP status line: \(lines[0].prefix(80))")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body: [UInt8] = []
        if status >= 200, status != 204, status != 304, method != "HEAD", let length = headers["content-length"].flatMap(Int.init) {
            while pending.count < length { try fill() }
            body = Array(pending[..<length])
            pending.removeFirst(length)
        }
        if status >= 200, status != 204, status != 304, method != "HEAD", headers["transfer-encoding"]?.lowercased() == "chunked" {
            while true {
                while findBytes(Array("\r\n".utf8), in: pending) == nil { try fill() }
                let lineEnd = findBytes(Array("\r\n".utf8), in: pending)!
                let size = Int(String(decoding: pending[..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
                pending.removeFirst(lineEnd + 2)
                while pending.count < size + 2 { try fill() }
                body += pending[..<size]
                pending.removeFirst(size + 2)
                if size == 0 { break }
            }
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// Reads the next final (non-1xx) response, returning the informational ones seen before it.
    func readFinal(method: String = "GET") async throws -> (informational: [Response], final: Response) {
        var informational: [Response] = []
        for _ in 0..<10 {
            let response = try await readResponse(method: method)
            if response.status >= 200 { return (informational, response) }
            informational.append(response)
        }
        throw TestFailure("too many informational responses")
    }

    /// Whether the peer closed the connection (reads until EOF or timeout).
    func readUntilClosed() async -> [UInt8] {
        (try? await offPool { self.readUntilClosedBlocking() }) ?? []
    }

    private func readUntilClosedBlocking() -> [UInt8] {
        var all = pending
        var buffer = [UInt8](repeating: 0, count: 65_536)
        for _ in 0..<100_000 {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            all += buffer[0..<n]
        }
        return all
    }

    private func fill() throws {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else { throw TestFailure("connection closed or timed out while reading (\(n), errno \(errno))") }
        pending += buffer[0..<n]
    }
}

func findBytes(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
        if Array(haystack[i..<(i + needle.count)]) == needle { return i }
    }
    return nil
}
