// A loopback server that speaks the IETF resumable-upload draft through swift-nio-extras'
// NIOResumableUpload, so Ferry is tested against that library and not only against itself.
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOPosix
import NIOResumableUpload
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A resumable-upload server on `127.0.0.1`, built on `HTTPResumableUploadHandler`.
///
/// `POST|PUT /upload/<name>` stores the complete body in a temporary file, streaming, and
/// answers `200` with `{"bytes":N,"sha256":"hex"}`. Requests carrying
/// `Upload-Draft-Interop-Version: 3|5|6` are handled by NIOResumableUpload exactly as that
/// library does: a `104` with `Location: http://127.0.0.1:PORT/resumable_upload/<token>`,
/// `HEAD` on that URL for `Upload-Offset`, `PATCH` to append. The observed wire behaviour is
/// written down in `Tests/FerryTestSupportTests/ResumableUploadServerTests.swift`.
///
/// ```swift
/// let server = try await ResumableUploadServer.start()
/// server.dropNextUpload(afterBytes: 100_000)   // the client must HEAD and PATCH the rest
/// // … upload 1 MB to server.baseURL + "/upload/photo" …
/// #expect(server.completedUploads["photo"]?.bytes == 1_000_000)
/// #expect(server.requests.map(\.method) == ["POST", "HEAD", "PATCH"])
/// try await server.shutdown()
/// ```
public final class ResumableUploadServer: Sendable {
    /// An upload that arrived whole.
    public struct CompletedUpload: Sendable, Equatable {
        /// Total bytes stored.
        public var bytes: Int
        /// Lower-case hex SHA-256 of the stored bytes.
        public var sha256: String
        /// Where the body is stored (removed by `shutdown()`).
        public var path: String
    }

    let shared: Shared
    private let channel: any Channel

    /// The TCP port the server listens on.
    public let port: Int
    /// `http://127.0.0.1:PORT`, with no trailing slash.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// The path prefix of resumption URLs (`Location` of an upload).
    public static let resumptionPath = "/resumable_upload/"

    private init(shared: Shared, channel: any Channel, port: Int) {
        self.shared = shared
        self.channel = channel
        self.port = port
    }

    /// Starts the server; `port` 0 lets the system choose.
    ///
    /// ```swift
    /// let server = try await ResumableUploadServer.start()
    /// print(server.baseURL + "/upload/report.pdf")
    /// ```
    ///
    /// `bytesPerSecond` reads each connection at most that fast (uploads that last, for tests
    /// that must interrupt them).
    public static func start(port: Int = 0, bytesPerSecond: Int? = nil) async throws -> ResumableUploadServer {
        var template = Array("/tmp/ferry-resumable-XXXXXX".utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestServerError("cannot create a temporary directory under /tmp (errno \(errno))")
        }
        let shared = Shared(directory: String(cString: dir))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    guard let context = shared.context.withLock({ $0 }) else {
                        throw TestServerError("connection before the server finished starting")
                    }
                    let number = shared.opened(child)
                    child.closeFuture.whenComplete { _ in shared.closed(child) }
                    let sync = child.pipeline.syncOperations
                    if let bytesPerSecond { try sync.addHandler(ReadThrottle(bytesPerSecond: bytesPerSecond)) }
                    try sync.configureHTTPServerPipeline()
                    try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                    try sync.addHandler(RecordingHandler(shared: shared, connection: number))
                    try sync.addHandler(
                        HTTPResumableUploadHandler(context: context) { uploadChannel in
                            try? uploadChannel.pipeline.syncOperations.addHandler(UploadStoreHandler(shared: shared))
                        })
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        guard let bound = channel.localAddress?.port else {
            throw TestServerError("the listening socket has no port")
        }
        shared.context.withLock {
            $0 = HTTPResumableUploadContext(origin: "http://127.0.0.1:\(bound)", path: resumptionPath)
        }
        return ResumableUploadServer(shared: shared, channel: channel, port: bound)
    }

    /// Stops listening, closes open connections and removes the stored files.
    public func shutdown() async throws {
        try? await channel.close()
        let open = shared.state.withLock { Array($0.channels.values) }
        for child in open { try? await child.close() }
        let paths = shared.state.withLock { s -> [String] in
            defer { s.completed = [:] }
            return s.completed.values.map(\.path) + s.partial
        }
        for path in paths { unlink(path) }
        // The whole folder: a handler still finishing when the channels closed may have
        // written a file after the list above (such folders were left behind in /tmp).
        try? FileManager.default.removeItem(atPath: shared.directory)
    }

    /// The next upload-body stream (an upload creation or a `PATCH` append, or any `POST`,
    /// `PUT` or `PATCH`) is cut after `afterBytes` body bytes: the connection is closed, so
    /// the client must ask for the offset and append the rest.
    public func dropNextUpload(afterBytes: Int) {
        shared.state.withLock { $0.dropNext = afterBytes }
    }

    /// Uploads received whole, by the `<name>` of `/upload/<name>`.
    public var completedUploads: [String: CompletedUpload] { shared.state.withLock { $0.completed } }

    /// Every request received, in arrival order, with the headers the client sent
    /// (`Upload-Draft-Interop-Version`, `Upload-Offset`, `Upload-Complete`, …).
    /// `bodyLength` is the body bytes that reached the server on that request.
    public var requests: [RecordedRequest] { shared.state.withLock { $0.requests } }

    /// Every response head sent, informational `104`s included, in order.
    public var responses: [RecordedResponse] { shared.state.withLock { $0.responses } }

    /// The resumption URLs (`Location`) handed out so far, oldest first.
    public var resumptionURLs: [String] {
        var seen: [String] = []
        for r in responses {
            if let l = r.header("location"), !seen.contains(l) { seen.append(l) }
        }
        return seen
    }

    /// Connections accepted since start.
    public var totalConnections: Int { shared.state.withLock { $0.total } }

    /// Clears the request and response logs (stored uploads stay).
    public func resetStatistics() {
        shared.state.withLock {
            $0.requests = []
            $0.responses = []
        }
    }
}

extension ResumableUploadServer {
    /// State shared by the server object and the channel handlers.
    final class Shared: Sendable {
        struct State {
            var requests: [RecordedRequest] = []
            var responses: [RecordedResponse] = []
            var completed: [String: CompletedUpload] = [:]
            var partial: [String] = []
            var dropNext: Int?
            var total = 0
            var nextFile = 0
            var channels: [ObjectIdentifier: any Channel] = [:]
        }
        let directory: String
        let state = Mutex(State())
        let context = Mutex<HTTPResumableUploadContext?>(nil)

        init(directory: String) { self.directory = directory }

        func opened(_ channel: any Channel) -> Int {
            state.withLock {
                $0.total += 1
                $0.channels[ObjectIdentifier(channel)] = channel
                return $0.total
            }
        }

        func closed(_ channel: any Channel) {
            _ = state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
        }
    }
}

/// Records each request and cuts an upload body when `dropNextUpload` is armed.
/// Sits between the HTTP codec and `HTTPResumableUploadHandler`, so it sees every request,
/// including the `HEAD` and `PATCH` that the resumable handler answers itself.
final class RecordingHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let shared: ResumableUploadServer.Shared
    private let connection: Int
    private var recordIndex: Int?
    private var received = 0
    private var cutAfter: Int?
    private var cut = false

    init(shared: ResumableUploadServer.Shared, connection: Int) {
        self.shared = shared
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !cut else { return }
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let request):
            received = 0
            // An empty creation request (Content-Length: 0) carries no body to cut.
            let isUpload = (request.method == .post || request.method == .put || request.method == .patch)
                && request.headerFields[.contentLength] != "0"
            let record = RecordedRequest(
                method: request.method.rawValue, uri: request.path ?? "",
                headers: request.headerFields.map { ($0.name.rawName, $0.value) }, connection: connection)
            (recordIndex, cutAfter) = shared.state.withLock { s in
                s.requests.append(record)
                var cutAfter: Int?
                if isUpload, let n = s.dropNext {
                    cutAfter = n
                    s.dropNext = nil
                }
                return (s.requests.count - 1, cutAfter)
            }
            context.fireChannelRead(data)
            if cutAfter == 0 { cutNow(context) }
        case .body(var buffer):
            if let cutAfter, received + buffer.readableBytes >= cutAfter {
                let keep = cutAfter - received
                received += keep
                if keep > 0, let slice = buffer.readSlice(length: keep) {
                    context.fireChannelRead(wrapInboundOut(.body(slice)))
                }
                cutNow(context)
                return
            }
            received += buffer.readableBytes
            updateLength()
            context.fireChannelRead(data)
        case .end:
            updateLength()
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head(let response) = unwrapOutboundIn(data) {
            let record = RecordedResponse(
                status: response.status.code,
                headers: response.headerFields.map { ($0.name.rawName, $0.value) }, connection: connection)
            shared.state.withLock { $0.responses.append(record) }
        }
        context.write(data, promise: promise)
    }

    private func cutNow(_ context: ChannelHandlerContext) {
        cut = true
        updateLength()
        context.close(promise: nil)
    }

    private func updateLength() {
        guard let recordIndex else { return }
        let received = self.received
        shared.state.withLock { s in
            if s.requests.indices.contains(recordIndex) { s.requests[recordIndex].bodyLength = received }
        }
    }
}

/// The application behind NIOResumableUpload: sees one plain request per upload, however
/// many connections carried it, and stores its body in a file.
final class UploadStoreHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private let shared: ResumableUploadServer.Shared
    private var name: String?
    private var path: String?
    private var fd: Int32 = -1
    private var hasher = SHA256Stream()
    private var bytes = 0
    private var failed = false

    init(shared: ResumableUploadServer.Shared) { self.shared = shared }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            let path = request.path ?? ""
            guard request.method == .post || request.method == .put, path.hasPrefix("/upload/"),
                path.count > "/upload/".count
            else {
                let status: HTTPResponse.Status = request.method == .options ? .ok : .notFound
                respond(context, status, "")
                return
            }
            let name = String(path.dropFirst("/upload/".count).split(separator: "?").first ?? "")
            let file = shared.state.withLock { s -> String in
                s.nextFile += 1
                let file = shared.directory + "/\(s.nextFile)-" + name.replacingSlashes
                s.partial.append(file)
                return file
            }
            self.name = name
            self.path = file
            fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            failed = fd < 0
        case .body(let buffer):
            guard fd >= 0 else { return }
            bytes += buffer.readableBytes
            buffer.withUnsafeReadableBytes { raw in
                hasher.update(raw)
                var done = 0
                // Bounded: each pass writes at least one byte or stops.
                while done < raw.count {
                    let n = write(fd, raw.baseAddress! + done, raw.count - done)
                    if n <= 0 {
                        failed = true
                        return
                    }
                    done += n
                }
            }
        case .end:
            guard let name, let path else { return }
            if fd >= 0 { close(fd) }
            fd = -1
            if failed {
                respond(context, .internalServerError, "{\"error\":\"cannot write \(path)\"}")
                return
            }
            let sha = hasher.finalizeHex()
            let upload = ResumableUploadServer.CompletedUpload(bytes: bytes, sha256: sha, path: path)
            shared.state.withLock { s in
                s.completed[name] = upload
                s.partial.removeAll { $0 == path }
            }
            respond(context, .ok, "{\"bytes\":\(bytes),\"sha256\":\"\(sha)\"}")
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponse.Status, _ json: String) {
        var response = HTTPResponse(status: status)
        response.headerFields[.contentLength] = String(json.utf8.count)
        if !json.isEmpty { response.headerFields[.contentType] = "application/json" }
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if !json.isEmpty {
            context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(string: json))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

extension String {
    fileprivate var replacingSlashes: String {
        String(map { $0 == "/" ? "_" : $0 })
    }
}

/// Reads a connection at most `bytesPerSecond`: once a tenth of a second's bytes arrived, the
/// next read waits for the next tenth.
final class ReadThrottle: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = Never

    private let budget: Int
    private var used = 0
    private var windowStart = NIODeadline.now()

    init(bytesPerSecond: Int) { budget = max(1, bytesPerSecond / 10) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        used += unwrapInboundIn(data).readableBytes
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        if now - windowStart >= .milliseconds(100) {
            windowStart = now
            used = 0
        }
        guard used >= budget else { return context.read() }
        let next = windowStart + .milliseconds(100)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(deadline: next) {
            let (throttle, context) = bound.value
            throttle.windowStart = next
            throttle.used = 0
            context.read()
        }
    }
}
