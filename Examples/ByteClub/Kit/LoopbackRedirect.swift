import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The app's own one-shot HTTP/1.1 listener on `127.0.0.1` for the browser's redirect back
/// (RFC 8252 7.3): it listens on a port the system picks, answers other paths with 404, and
/// returns the query of the first `GET` of `path`, after answering the browser with the page
/// `answer` makes of it. It is a server, not the app's HTTP client (that is Ferry).
///
/// ```swift
/// let listener = try LoopbackRedirect()
/// let redirectURI = "http://127.0.0.1:\(listener.port)/callback"
/// let query = try await listener.wait(for: "/callback", timeout: .seconds(300)) { query in
///     (200, "<p>Signed in: you can close this tab.</p>")
/// }
/// ```
public final class LoopbackRedirect: Sendable {
    public let port: Int
    private let socket: Int32

    /// Listens on `127.0.0.1`, port chosen by the system.
    public init() throws {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ByteClubError.local("cannot open a socket for the browser's answer: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ByteClubError.local("cannot listen on 127.0.0.1 for the browser's answer: \(reason)")
        }
        socket = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socket) }

    /// Waits (bounded by `timeout`; cancelling the task stops it with ``ByteClubError/cancelled``)
    /// for `GET path?…`, answers it with `answer(query)` (status, HTML) and returns the query.
    public func wait(for path: String, timeout: Duration,
                     answer: ([String: String]) -> (status: Int, html: String)) async throws -> [String: String] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let client = accept(socket, nil, nil)
            guard client >= 0 else {
                try await pause()
                continue
            }
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            defer { close(client) }
            guard let head = try await readHead(client) else { continue }
            let target = head.split(separator: " ", maxSplits: 2)
            guard target.count == 3, target[0] == "GET" else {
                reply(client, status: 405, html: "<p>Only GET is answered here.</p>")
                continue
            }
            let parts = target[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == path else {
                reply(client, status: 404, html: "<p>Not found.</p>")
                continue
            }
            let query = Self.decodeQuery(parts.count > 1 ? String(parts[1]) : "")
            let (status, html) = answer(query)
            reply(client, status: status, html: html)
            return query
        }
        throw ByteClubError.notApproved("no answer came back from the browser within \(timeout.components.seconds) s")
    }

    /// The request head (up to its blank line), read within 5 s; `nil` when the client sent
    /// none (a browser's speculative connection) or too much.
    private func readHead(_ client: Int32) async throws -> String? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, bytes.count < 16 << 10 {
            let count = recv(client, &buffer, buffer.count, 0)
            if count > 0 {
                bytes += buffer[0..<count]
                if let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) { return String(decoding: bytes[..<end.lowerBound], as: UTF8.self) }
            } else if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return nil
            } else {
                try await pause()
            }
        }
        return nil
    }

    private func pause() async throws {
        do { try await Task.sleep(for: .milliseconds(25)) } catch { throw ByteClubError.cancelled }
    }

    private func reply(_ client: Int32, status: Int, html: String) {
        let body = Array("<!doctype html><html lang=en><head><meta charset=utf-8><title>Byte Club</title></head><body>\(html)</body></html>".utf8)
        let reason = [200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed"][status] ?? "Error"
        let head = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.count)\r\n"
            + "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + body
        // Blocking for this one small write: the socket's buffer takes it whole.
        let flags = fcntl(client, F_GETFL)
        _ = fcntl(client, F_SETFL, flags & ~O_NONBLOCK)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { if errno == EINTR { continue } else { break } }
            sent += count
        }
        shutdown(client, Int32(SHUT_WR))
    }

    /// `a=1&b=x%20y` → `["a": "1", "b": "x y"]` (`+` is a space, as forms encode it).
    static func decodeQuery(_ query: String) -> [String: String] {
        query.split(separator: "&").reduce(into: [:]) { result, pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            result[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
    }
}
