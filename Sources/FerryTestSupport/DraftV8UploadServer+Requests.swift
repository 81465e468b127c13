// The v8 server's answers: OPTIONS, creation, HEAD, PATCH, DELETE and plain uploads, each
// checked against the draft before anything is stored.
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DraftV8UploadServer {
    typealias Parts = NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator

    /// Answers one request; false when the connection must close (a fault cut it).
    func handle(_ x: Exchange, _ parts: inout Parts) async throws -> Bool {
        let version = x.header("upload-draft-interop-version")
        let path = x.path
        if x.head.method == .OPTIONS {
            guard version == nil || version == "\(Self.interopVersion)" else { return try await refuseVersion(x, &parts) }
            try await drain(x, &parts)
            if version == nil {
                return try await reply(x, .noContent, [("Allow", "OPTIONS, POST, PUT"), ("Accept-Patch", "application/partial-upload")])
            }
            var fields = [("Accept-Patch", "application/partial-upload")]
            if options.announceLimitsInOptions, let limits = options.limits.fieldValue { fields.append(("Upload-Limit", limits)) }
            return try await reply(x, .noContent, fields)
        }
        if path.hasPrefix("/upload/"), path.count > "/upload/".count, x.head.method == .POST || x.head.method == .PUT {
            let name = String(path.dropFirst("/upload/".count)).replacingOccurrences(of: "/", with: "_")
            guard x.header("upload-complete") != nil else { return try await plainUpload(x, name: name, &parts) }
            return try await create(x, name: name, &parts)
        }
        if path.hasPrefix(Self.resourcePath) {
            let token = String(path.dropFirst(Self.resourcePath.count))
            guard version == "\(Self.interopVersion)" else { return try await refuseVersion(x, &parts) }
            switch x.head.method {
            case .HEAD: return try await offset(x, token: token, &parts)
            case .PATCH: return try await append(x, token: token, &parts)
            case .DELETE: return try await cancel(x, token: token, &parts)
            default:
                try await drain(x, &parts)
                return try await refuse(x, .methodNotAllowed, "\(x.method) on an upload resource", [("Allow", "HEAD, PATCH, DELETE")])
            }
        }
        try await drain(x, &parts)
        return try await reply(x, .notFound, [])
    }

    // MARK: Requests

    private func plainUpload(_ x: Exchange, name: String, _ parts: inout Parts) async throws -> Bool {
        let token = "plain-\(x.id)"
        try openUpload(token, name: name)
        guard try await receive(x, token: token, completes: true, &parts) else { return false }
        return try await finish(x, token: token, resumable: false)
    }

    private func create(_ x: Exchange, name: String, _ parts: inout Parts) async throws -> Bool {
        let limits = options.limits
        guard x.header("upload-draft-interop-version") == "\(Self.interopVersion)" else { return try await refuseVersion(x, &parts) }
        guard let complete = Self.boolean(x.header("upload-complete")) else {
            return try await refuseAfterDrain(x, &parts, .badRequest, "Upload-Complete is not a structured boolean")
        }
        if let offset = x.header("upload-offset"), offset != "0" {
            return try await refuseAfterDrain(x, &parts, .badRequest, "a creation request with Upload-Offset \(offset)")
        }
        var length = Self.integer(x.header("upload-length"))
        if complete, let contentLength = x.contentLength {
            if let length, length != contentLength {
                return try await refuseAfterDrain(x, &parts, .badRequest, "Upload-Length \(length) but a complete body of \(contentLength)")
            }
            length = contentLength
        }
        if let max = limits.maxSize, let length, length > max {
            return try await refuseAfterDrain(x, &parts, .payloadTooLarge, "length \(length) over max-size \(max)", limited: true)
        }
        if let min = limits.minSize, let length, length < min {
            return try await refuseAfterDrain(x, &parts, .badRequest, "length \(length) under min-size \(min)", limited: true)
        }
        if let max = limits.maxAppendSize, let size = x.contentLength, size > max {
            return try await refuseAfterDrain(x, &parts, .payloadTooLarge, "creation content \(size) over max-append-size \(max)", limited: true)
        }
        let token = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()
        try openUpload(token, name: name)
        state.withLock { s in
            s.uploads[token]?.length = length
            s.creations += 1
        }
        let location = Self.resourcePath + token
        var interim = [("Location", location), ("Upload-Draft-Interop-Version", "\(Self.interopVersion)")]
        if let field = limits.fieldValue { interim.append(("Upload-Limit", field)) }
        _ = try await reply(x, HTTPResponseStatus(statusCode: 104, reasonPhrase: "Upload Resumption Supported"), interim)
        guard try await receive(x, token: token, completes: complete, &parts) else { return false }
        if complete { return try await finish(x, token: token, resumable: true) }
        let offset = state.withLock { $0.uploads[token]?.offset ?? 0 }
        var fields = [("Location", location), ("Upload-Complete", "?0"), ("Upload-Offset", "\(offset)")]
        if let field = limits.fieldValue { fields.append(("Upload-Limit", field)) }
        return try await reply(x, .created, fields)
    }

    private func offset(_ x: Exchange, token: String, _ parts: inout Parts) async throws -> Bool {
        try await drain(x, &parts)
        let unavailable = state.withLock { s -> Bool in
            guard s.unavailableHeads > 0 else { return false }
            s.unavailableHeads -= 1
            return true
        }
        if unavailable { return try await reply(x, .serviceUnavailable, [("Retry-After", "1")]) }
        let found = state.withLock { s -> (Int, Bool, Int?)? in
            guard s.uploads[token] != nil else { return nil }
            s.takeOver(token, by: x)
            let upload = s.uploads[token]!
            defer { s.staleBy = 0 }
            return (max(0, upload.offset - s.staleBy), upload.complete, upload.length)
        }
        guard let (offset, complete, length) = found else { return try await reply(x, .notFound, []) }
        var fields = [("Upload-Offset", "\(offset)"), ("Upload-Complete", complete ? "?1" : "?0"), ("Cache-Control", "no-store")]
        if let length { fields.append(("Upload-Length", "\(length)")) }
        if let limits = options.limits.fieldValue { fields.append(("Upload-Limit", limits)) }
        return try await reply(x, .noContent, fields)
    }

    private func append(_ x: Exchange, token: String, _ parts: inout Parts) async throws -> Bool {
        let limits = options.limits
        let found = state.withLock { s -> Upload? in
            guard s.uploads[token] != nil else { return nil }
            s.takeOver(token, by: x)
            return s.uploads[token]
        }
        guard let upload = found else {
            try await drain(x, &parts)
            return try await reply(x, .notFound, [])
        }
        guard x.header("content-type")?.lowercased() == "application/partial-upload" else {
            return try await refuseAfterDrain(x, &parts, .unsupportedMediaType, "an append whose Content-Type is \(x.header("content-type") ?? "missing")")
        }
        guard let offset = Self.integer(x.header("upload-offset")) else {
            return try await refuseAfterDrain(x, &parts, .badRequest, "an append without a valid Upload-Offset")
        }
        guard let complete = Self.boolean(x.header("upload-complete")) else {
            return try await refuseAfterDrain(x, &parts, .badRequest, "an append without a valid Upload-Complete")
        }
        let size = x.contentLength
        if upload.complete {
            let sent = try await drain(x, &parts)
            let kind = sent > 0 ? "inconsistent-upload-length" : "completed-upload"
            return try await refuse(x, .badRequest, "an append to a completed upload", problem: kind)
        }
        if offset != upload.offset {
            try await drain(x, &parts)
            return try await refuse(
                x, .conflict, "offset \(offset), ours is \(upload.offset)",
                [("Upload-Offset", "\(upload.offset)"), ("Upload-Complete", "?0")],
                problem: "mismatching-upload-offset", extra: ",\"expected-offset\":\(upload.offset),\"provided-offset\":\(offset)")
        }
        if let max = limits.maxAppendSize, (size ?? 0) > max {
            return try await refuseAfterDrain(x, &parts, .payloadTooLarge, "an append of \(size ?? 0) over max-append-size \(max)", limited: true)
        }
        if let min = limits.minAppendSize, !complete, let size, size < min {
            return try await refuseAfterDrain(x, &parts, .badRequest, "an incomplete append of \(size) under min-append-size \(min)", limited: true)
        }
        var length = upload.length
        if let stated = Self.integer(x.header("upload-length")) {
            if let length, length != stated { return try await refuseAfterDrain(x, &parts, .badRequest, "Upload-Length \(stated), first \(length)", problem: "inconsistent-upload-length") }
            length = stated
        }
        if complete, let size {
            if let length, length != offset + size { return try await refuseAfterDrain(x, &parts, .badRequest, "a completing append ending at \(offset + size) of \(length)", problem: "inconsistent-upload-length") }
            length = offset + size
        }
        state.withLock { $0.uploads[token]?.length = length }
        guard try await receive(x, token: token, completes: complete, &parts) else { return false }
        guard complete else {
            let now = state.withLock { $0.uploads[token]?.offset ?? 0 }
            return try await reply(x, .noContent, [("Upload-Complete", "?0"), ("Upload-Offset", "\(now)")])
        }
        return try await finish(x, token: token, resumable: true)
    }

    private func cancel(_ x: Exchange, token: String, _ parts: inout Parts) async throws -> Bool {
        try await drain(x, &parts)
        let known = state.withLock { s -> Bool in
            guard s.uploads[token] != nil else { return false }
            s.takeOver(token, by: x)
            s.discard(token)
            return true
        }
        return try await reply(x, known ? .noContent : .notFound, [])
    }

    // MARK: Bodies

    private func openUpload(_ token: String, name: String) throws {
        let path = state.withLock { s -> String in
            s.nextFile += 1
            return directory.path + "/\(s.nextFile)-\(name)"
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestServerError("cannot create \(path) (errno \(errno))") }
        state.withLock { $0.uploads[token] = Upload(name: name, path: path, fd: fd) }
    }

    /// Appends the request's body to the upload as it arrives, reporting progress with a `104`
    /// each MiB. False when the connection must close: a fault cut it, a newer request for the
    /// upload took over, or the body ran past the upload's length. A dropped answer still
    /// completes an upload whose last bytes arrived (`completes`).
    private func receive(_ x: Exchange, token: String, completes: Bool, _ parts: inout Parts) async throws -> Bool {
        let carriesBody = x.contentLength.map { $0 > 0 } ?? (x.header("transfer-encoding") != nil)
        let fault = state.withLock { s -> Fault? in
            s.uploads[token]?.writer = (x.id, x.channel)
            guard carriesBody else { return nil }
            defer { s.fault = nil }
            return s.fault
        }
        var received = 0
        var reported = 0
        var ended = false
        while let part = try await parts.next() {
            guard case .body(let buffer) = part else {
                if case .end = part { ended = true }
                break
            }
            let keep = fault?.cutAfter.map { min(buffer.readableBytes, $0 - received) } ?? buffer.readableBytes
            let written = state.withLock { $0.append(buffer.getSlice(at: buffer.readerIndex, length: keep)!, to: token, by: x) }
            guard let offset = written else {
                state.withLock { $0.requests[x.id].bodyLength = received }
                return false
            }
            received += keep
            state.withLock { $0.requests[x.id].bodyLength = received }
            if let cut = fault?.cutAfter, received >= cut { return cutConnection(x, token: token, forget: fault?.forget ?? false) }
            if offset - reported >= 1 << 20, !token.hasPrefix("plain-") {
                reported = offset
                _ = try await reply(x, HTTPResponseStatus(statusCode: 104, reasonPhrase: "Upload Resumption Supported"),
                    [("Upload-Offset", "\(offset)"), ("Upload-Draft-Interop-Version", "\(Self.interopVersion)")])
            }
        }
        // The client went away mid-body: what arrived stays, nothing is complete.
        guard ended else { return cutConnection(x, token: token, forget: false) }
        state.withLock { $0.uploads[token]?.writer = nil }
        if let fault, fault.cutAfter == nil {
            if completes { finishStored(token) }
            return cutConnection(x, token: token, forget: fault.forget)
        }
        return true
    }

    private func cutConnection(_ x: Exchange, token: String, forget: Bool) -> Bool {
        state.withLock { s in
            s.uploads[token]?.writer = nil
            if forget { s.discard(token) }
        }
        x.channel.close(promise: nil)
        return false
    }

    /// Marks the upload complete and records it; the lengths were checked before the body.
    @discardableResult
    private func finishStored(_ token: String) -> CompletedUpload? {
        state.withLock { s -> CompletedUpload? in
            guard var upload = s.uploads[token], !upload.complete else { return nil }
            if upload.fd >= 0 { close(upload.fd) }
            upload.fd = -1
            upload.complete = true
            let done = CompletedUpload(bytes: upload.offset, sha256: upload.hasher.finalizeHex(), path: upload.path)
            s.uploads[token] = upload
            s.completed[upload.name] = done
            return done
        }
    }

    private func finish(_ x: Exchange, token: String, resumable: Bool) async throws -> Bool {
        let length = state.withLock { s in s.uploads[token].map { ($0.offset, $0.length) } }
        if let (offset, length) = length, let length, offset != length {
            return try await refuse(x, .badRequest, "the upload completed at \(offset) of \(length)", problem: "inconsistent-upload-length")
        }
        guard let done = finishStored(token) else { return try await reply(x, .notFound, []) }
        let json = "{\"bytes\":\(done.bytes),\"sha256\":\"\(done.sha256)\"}"
        return try await reply(x, .ok, resumable ? [("Upload-Complete", "?1")] : [], json: json)
    }

    /// Reads the rest of the body and throws it away; returns its length.
    @discardableResult
    private func drain(_ x: Exchange, _ parts: inout Parts) async throws -> Int {
        var length = 0
        while let part = try await parts.next() {
            guard case .body(let buffer) = part else { break }
            length += buffer.readableBytes
        }
        state.withLock { $0.requests[x.id].bodyLength = length }
        return length
    }

    // MARK: Answers

    private func refuseVersion(_ x: Exchange, _ parts: inout Parts) async throws -> Bool {
        try await refuseAfterDrain(
            x, &parts, .badRequest, "Upload-Draft-Interop-Version \(x.header("upload-draft-interop-version") ?? "missing")",
            [("Upload-Draft-Interop-Version", "\(Self.interopVersion)")])
    }

    private func refuseAfterDrain(
        _ x: Exchange, _ parts: inout Parts, _ status: HTTPResponseStatus, _ reason: String,
        _ fields: [(String, String)] = [], limited: Bool = false, problem: String? = nil
    ) async throws -> Bool {
        try await drain(x, &parts)
        var fields = fields
        if limited, let limits = options.limits.fieldValue { fields.append(("Upload-Limit", limits)) }
        return try await refuse(x, status, reason, fields, problem: problem)
    }

    /// Records the refusal and answers it, with an RFC 9457 problem body when the draft names a type.
    private func refuse(
        _ x: Exchange, _ status: HTTPResponseStatus, _ reason: String, _ fields: [(String, String)] = [],
        problem: String? = nil, extra: String = ""
    ) async throws -> Bool {
        state.withLock { $0.refusals.append(Refusal(method: x.method, status: Int(status.code), reason: reason)) }
        let type = problem.map { "https://iana.org/assignments/http-problem-types#\($0)" } ?? "about:blank"
        let json = "{\"type\":\(jsonString(type)),\"title\":\(jsonString(reason))\(extra)}"
        return try await reply(x, status, fields, json: json, contentType: "application/problem+json")
    }

    /// Writes a response (an informational one has no body or end), recording its head.
    private func reply(
        _ x: Exchange, _ status: HTTPResponseStatus, _ fields: [(String, String)], json: String? = nil,
        contentType: String = "application/json"
    ) async throws -> Bool {
        var headers = HTTPHeaders(fields)
        if let json {
            headers.add(name: "Content-Type", value: contentType)
            headers.add(name: "Content-Length", value: "\(json.utf8.count)")
        } else if status.code >= 200, status.code != 204 {
            headers.add(name: "Content-Length", value: "0")
        }
        state.withLock { $0.responses.append(RecordedResponse(status: Int(status.code), headers: headers.map { ($0.name, $0.value) }, connection: x.connection)) }
        try await x.channel.writeAndFlush(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))).get()
        guard status.code >= 200 else { return true }
        if let json, x.head.method != .HEAD {
            try await x.channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(x.channel.allocator.buffer(string: json)))).get()
        }
        try await x.channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
        return true
    }

    /// A structured-field boolean (`?0`, `?1`); nil otherwise.
    static func boolean(_ value: String?) -> Bool? {
        switch value { case "?1": true; case "?0": false; default: nil }
    }

    /// A structured-field non-negative integer; nil otherwise (the draft: the field is then ignored).
    static func integer(_ value: String?) -> Int? {
        guard let value, (1...15).contains(value.count), value.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        return Int(value)
    }
}

extension DraftV8UploadServer.State {
    /// A request for an upload while another is appending to it: the older one is cut (draft 4.6).
    mutating func takeOver(_ token: String, by x: DraftV8UploadServer.Exchange) {
        guard let writer = uploads[token]?.writer, writer.id != x.id else { return }
        writer.channel.close(promise: nil)
        uploads[token]?.writer = nil
    }

    /// Appends `bytes` for request `x`; the new offset, or nil when the upload is gone, another
    /// request took over, or the bytes would run past its length (it is then deactivated).
    mutating func append(_ bytes: ByteBuffer, to token: String, by x: DraftV8UploadServer.Exchange) -> Int? {
        guard var upload = uploads[token], upload.writer?.id == x.id, upload.fd >= 0 else { return nil }
        if let length = upload.length, upload.offset + bytes.readableBytes > length {
            refusals.append(.init(method: x.method, status: 400, reason: "a body running past the upload's length \(length)"))
            discard(token)
            return nil
        }
        let ok = bytes.withUnsafeReadableBytes { raw -> Bool in
            upload.hasher.update(raw)
            var done = 0
            // Bounded: each pass writes at least one byte or stops.
            while done < raw.count {
                let n = write(upload.fd, raw.baseAddress! + done, raw.count - done)
                if n <= 0 { return false }
                done += n
            }
            return true
        }
        guard ok else { return nil }
        upload.offset += bytes.readableBytes
        uploads[token] = upload
        return upload.offset
    }
}
