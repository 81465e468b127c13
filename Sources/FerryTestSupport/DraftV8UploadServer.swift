// A loopback server that speaks interop version 8 of the IETF resumable-upload draft, and
// nothing else, strictly: the other side of Ferry's v8 client, which NIOResumableUpload
// (3, 5, 6) cannot test.
//
// Interop 8 is draft-ietf-httpbis-resumable-upload-09 to -11 (from June 2025; the editors'
// copy moved to 9 after -11, httpwg/http-extensions PR 3476). Sources: the draft's "Changes"
// and "Draft Version Identification" sections (httpwg/http-extensions,
// draft-ietf-httpbis-resumable-upload.md). What it asks of a server (sections of that copy):
// - OPTIONS: `Accept-Patch: application/partial-upload`; `Upload-Limit` when limits apply (4.1.4).
// - creation, a POST or PUT with `Upload-Complete`: a `104` naming `Location` and the interop
//   version, then `201` + `Location` + `Upload-Limit` while incomplete, or the answer (4.2).
// - HEAD: `204` + `Upload-Offset`, `Upload-Complete`, `Upload-Length`, `Upload-Limit`,
//   `Cache-Control: no-store` (4.3).
// - PATCH: `Content-Type: application/partial-upload`, `Upload-Offset` and `Upload-Complete`
//   required; a wrong offset gets `409` with ours; a completed upload is never appended to;
//   lengths must agree; `104`s report progress (4.4).
// - DELETE: the resource goes, an append in flight is cut (4.5, 4.6).
// A request for an upload resource without `Upload-Draft-Interop-Version: 8` gets `400`
// naming 8, the convention NIOResumableUpload follows (the draft only forbids the `104`).
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A resumable-upload server on `127.0.0.1` that speaks interop version 8 only, refuses what
/// the draft forbids (each refusal is listed in ``refusals``), and misbehaves on request.
///
/// `POST|PUT /upload/<name>` stores the body in a file, streaming, and answers
/// `{"bytes":N,"sha256":"hex"}`; with `Upload-Complete` it creates an upload resource at
/// `/uploads/<token>` (a relative `Location`) that takes `HEAD`, `PATCH` and `DELETE`.
///
/// ```swift
/// let server = try await DraftV8UploadServer.start()
/// server.cutNextUpload(afterBytes: 1_000_000)   // the client must HEAD and PATCH the rest
/// // … upload to server.baseURL + "/upload/photo" …
/// #expect(server.completedUploads["photo"]?.sha256 == expected)
/// #expect(server.creations == 1 && server.refusals.isEmpty)
/// try await server.shutdown()
/// ```
public final class DraftV8UploadServer: Sendable {
    /// The `Upload-Draft-Interop-Version` spoken.
    public static let interopVersion = 8
    /// Where upload resources live (the path of their relative `Location`).
    public static let resourcePath = "/uploads/"

    /// The limits announced in `Upload-Limit` and enforced.
    public struct Limits: Sendable, Hashable {
        public var maxSize: Int?
        public var minSize: Int?
        public var maxAppendSize: Int?
        public var minAppendSize: Int?
        /// Seconds an upload resource lives (announced only).
        public var maxAge: Int?

        public init(maxSize: Int? = nil, minSize: Int? = nil, maxAppendSize: Int? = nil, minAppendSize: Int? = nil, maxAge: Int? = nil) {
            self.maxSize = maxSize
            self.minSize = minSize
            self.maxAppendSize = maxAppendSize
            self.minAppendSize = minAppendSize
            self.maxAge = maxAge
        }

        /// The `Upload-Limit` field value (a structured dictionary), nil when no limit is set.
        public var fieldValue: String? {
            let pairs: [(String, Int?)] = [
                ("max-size", maxSize), ("min-size", minSize), ("max-append-size", maxAppendSize),
                ("min-append-size", minAppendSize), ("max-age", maxAge),
            ]
            let set = pairs.compactMap { key, value in value.map { "\(key)=\($0)" } }
            return set.isEmpty ? nil : set.joined(separator: ", ")
        }
    }

    /// How the server behaves.
    public struct Options: Sendable {
        /// Announced in `OPTIONS` (when ``announceLimitsInOptions``), creation and `HEAD`.
        public var limits: Limits
        /// False: `OPTIONS` says only `Accept-Patch`, as a v8 server with no limits does.
        public var announceLimitsInOptions: Bool

        public init(limits: Limits = Limits(maxSize: 1 << 30, maxAge: 3600), announceLimitsInOptions: Bool = true) {
            self.limits = limits
            self.announceLimitsInOptions = announceLimitsInOptions
        }
    }

    /// An upload received whole.
    public struct CompletedUpload: Sendable, Equatable {
        /// Total bytes stored.
        public var bytes: Int
        /// Lower-case hex SHA-256 of the stored bytes.
        public var sha256: String
        /// Where the body is stored (removed by `shutdown()`).
        public var path: String
    }

    /// A request refused because the draft forbids what it asked.
    public struct Refusal: Sendable, Equatable {
        public var method: String
        public var status: Int
        public var reason: String
    }

    typealias Connection = LoopbackHTTPListener.Connection

    let options: Options
    let directory: URL
    let state = Mutex(State())
    private let listener: LoopbackHTTPListener

    /// The TCP port the server listens on.
    public let port: Int
    /// `http://127.0.0.1:PORT`, with no trailing slash.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    private init(options: Options, directory: URL, listener: LoopbackHTTPListener) {
        self.options = options
        self.directory = directory
        self.listener = listener
        self.port = listener.port
    }

    /// Starts the server on `127.0.0.1`, port chosen by the system, files in a fresh temporary directory.
    ///
    /// ```swift
    /// let server = try await DraftV8UploadServer.start(options: .init(limits: .init(maxAppendSize: 1 << 20)))
    /// ```
    public static func start(options: Options = Options()) async throws -> DraftV8UploadServer {
        let directory = try TestFiles.makeTemporaryDirectory()
        let server = DraftV8UploadServer(options: options, directory: directory, listener: try await LoopbackHTTPListener.bind(pipeliningAssistance: false))
        server.listener.startAccepting { connection, number in try await server.serve(connection, number: number) }
        return server
    }

    /// Stops listening, closes open connections, waits for their handlers, removes the files.
    public func shutdown() async throws {
        await listener.shutdown()
        state.withLock { s in
            for token in Array(s.uploads.keys) { s.discard(token) }
            s.completed = [:]
        }
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Faults

    /// The next request that carries body bytes (creation, `PATCH`, plain upload) is cut after
    /// `afterBytes` of them: what arrived is kept and the connection closed. With `thenForget`
    /// the upload resource is dropped too, so a `HEAD` gets `404`.
    public func cutNextUpload(afterBytes: Int, thenForget: Bool = false) {
        state.withLock { $0.fault = Fault(cutAfter: afterBytes, forget: thenForget) }
    }

    /// The next request that carries body bytes is processed whole (an upload it completes is
    /// stored), then the connection closes without an answer; `thenForget` drops the resource.
    public func dropNextAnswer(thenForget: Bool = false) {
        state.withLock { $0.fault = Fault(cutAfter: nil, forget: thenForget) }
    }

    /// The next `HEAD` reports an offset `bytes` lower than the real one, as a server still
    /// busy with a previous append might: the following `PATCH` then meets a `409`.
    public func reportStaleOffsetOnNextHead(by bytes: Int) {
        state.withLock { $0.staleBy = bytes }
    }

    /// The next `count` `HEAD`s answer `503 Service Unavailable` with `Retry-After: 1`, as a
    /// server restarting or overloaded would, without forgetting the upload.
    public func failNextHeads(_ count: Int) {
        state.withLock { $0.unavailableHeads = count }
    }

    // MARK: What happened

    /// Uploads received whole, by the `<name>` of `/upload/<name>`.
    public var completedUploads: [String: CompletedUpload] { state.withLock { $0.completed } }
    /// Upload resources created (each creation request that got a `Location`).
    public var creations: Int { state.withLock { $0.creations } }
    /// Every request refused for breaking the draft, in order.
    public var refusals: [Refusal] { state.withLock { $0.refusals } }
    /// Every request received, in arrival order; `bodyLength` is what arrived of its body.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }
    /// Every response head sent, `104`s included, in order.
    public var responses: [RecordedResponse] { state.withLock { $0.responses } }
    /// Connections accepted since start.
    public var totalConnections: Int { listener.counts.total }

    // MARK: Connections

    /// Serves requests on one connection until it closes, a fault cuts it, or a request asks to.
    private func serve(_ connection: Connection, number: Int) async throws {
        try await connection.executeThenClose { inbound, _ in
            var parts = inbound.makeAsyncIterator()
            // Bounded: a keep-alive connection serves at most this many requests.
            for _ in 0..<10_000 {
                guard let part = try await parts.next() else { return }
                guard case .head(let head) = part else { continue }
                let id = state.withLock { s in
                    s.requests.append(RecordedRequest(
                        method: head.method.rawValue, uri: head.uri,
                        headers: head.headers.map { ($0.name, $0.value) }, connection: number))
                    return s.requests.count - 1
                }
                let exchange = Exchange(head: head, id: id, connection: number, channel: connection.channel)
                guard try await handle(exchange, &parts), head.isKeepAlive else { return }
            }
        }
    }
}

extension DraftV8UploadServer {
    /// A fault armed for the next request that carries body bytes.
    struct Fault {
        /// Body bytes taken before the cut; nil: all of them, and no answer.
        var cutAfter: Int?
        var forget: Bool
    }

    /// One upload: a resumable one (by token) or a plain one, stored as it arrives.
    struct Upload {
        var name: String
        var path: String
        var fd: Int32
        var offset = 0
        var length: Int?
        var complete = false
        var hasher = SHA256Stream()
        /// The request appending now, and its connection: a newer request for the same
        /// upload cuts it (draft 4.6), so two appends never interleave.
        var writer: (id: Int, channel: any Channel)?
    }

    struct State {
        var requests: [RecordedRequest] = []
        var responses: [RecordedResponse] = []
        var refusals: [Refusal] = []
        var uploads: [String: Upload] = [:]
        var completed: [String: CompletedUpload] = [:]
        var creations = 0
        var fault: Fault?
        var staleBy = 0
        var unavailableHeads = 0
        var nextFile = 0

        /// Closes and removes an upload's file and forgets it; a request appending to it is cut.
        mutating func discard(_ token: String) {
            guard let upload = uploads.removeValue(forKey: token) else { return }
            upload.writer?.channel.close(promise: nil)
            if upload.fd >= 0 { close(upload.fd) }
            if !upload.complete { unlink(upload.path) }
        }
    }

    /// One request being answered.
    struct Exchange {
        var head: HTTPRequestHead
        /// Index into `requests`.
        var id: Int
        /// 1-based number of the connection, in accept order.
        var connection: Int
        var channel: any Channel

        var method: String { head.method.rawValue }
        var path: String { String(head.uri.split(separator: "?", maxSplits: 1).first ?? "") }
        func header(_ name: String) -> String? { head.headers.first(name: name) }
        /// `Content-Length`, nil when absent (chunked) or not a number.
        var contentLength: Int? { header("content-length").flatMap { Int($0) } }
    }
}
