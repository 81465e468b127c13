import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension ServerState {
    /// Streams a request body into `file`, refusing more than `limit` bytes (413) or more than
    /// `room` bytes (507). The body is never held in memory; the caller commits or discards.
    func stream(_ body: RequestBody, into file: TempFile, limit: Int64, room: Int64) async throws {
        for try await buffer in body {
            let next = file.bytesWritten + Int64(buffer.readableBytes)
            if next > limit { throw APIError.tooLarge(limit) }
            if next > room { throw APIError.overQuota }
            try file.write(buffer)
        }
    }

    /// Writes a whole request body to a new durable blob; returns its name and size.
    /// `reclaimable`: bytes of a file this upload would replace (the final check is in the
    /// transaction that writes the row).
    func receiveBlob(_ request: Request, account: Account, reclaimable: Int64 = 0) async throws -> (blob: String, bytes: Int64) {
        let limit = configuration.maxBodyBytes
        let room = configuration.quotaBytes - (try await usedBytes(namespace: account.namespaceId)) + reclaimable
        if let length = request.headers[.contentLength].flatMap(Int64.init) {
            if length > limit { throw APIError.tooLarge(limit) }
            if length > room { throw APIError.overQuota }
        }
        let declared = Self.declaredLength(request.headers)
        let temp = try blobs.makeTemp()
        do {
            try await stream(request.body, into: temp, limit: limit, room: room)
            let bytes = temp.bytesWritten
            // A body cut short (connection closed at shutdown, a client gone) must not be stored
            // as if it were the whole file.
            if let declared, bytes != declared {
                throw APIError(.badRequest, "Incomplete body: \(bytes) of \(declared) bytes (Content-Length) arrived")
            }
            return (try blobs.commit(temp), bytes)
        } catch {
            temp.discard()
            throw error
        }
    }

    /// The whole body's length as the client announced it: a resumable upload's `Upload-Length`
    /// (its creation request may carry none of the body, with `Content-Length: 0`, and the rest
    /// arrives in appends), else `Content-Length` of a plain request; nil when unknown.
    static func declaredLength(_ headers: HTTPFields) -> Int64? {
        if let uploadLength = headers[HTTPField.Name("Upload-Length")!] { return Int64(uploadLength) }
        if headers[HTTPField.Name("Upload-Complete")!] != nil { return nil }
        return headers[.contentLength].flatMap(Int64.init)
    }

    /// Collects a body of at most `limit` bytes into memory (forms, images, bin requests).
    func collect(_ request: Request, limit: Int) async throws -> ByteBuffer {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.tooLarge(Int64(limit))
        }
        var collected = ByteBuffer()
        for try await buffer in request.body {
            guard collected.readableBytes + buffer.readableBytes <= limit else { throw APIError.tooLarge(Int64(limit)) }
            var buffer = buffer
            collected.writeBuffer(&buffer)
        }
        return collected
    }

    /// Query parameters merged with an `application/x-www-form-urlencoded` body (Dropbox v1
    /// took both); the body wins.
    func parameters(_ request: Request) async throws -> [String: String] {
        var result: [String: String] = [:]
        for (key, value) in request.uri.queryParameters {
            result[String(key)] = String(value)
        }
        if request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true {
            let body = try await collect(request, limit: 1 << 20)
            for (key, value) in Self.decodeForm(String(buffer: body)) { result[key] = value }
        }
        return result
    }

    static func decodeForm(_ text: String) -> [(String, String)] {
        text.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s)
            }
            guard let key = parts.first else { return nil }
            return (decode(key), parts.count > 1 ? decode(parts[1]) : "")
        }
    }
}

/// Reads boolean and integer parameters the way Dropbox v1 did, naming the bad one in the 400.
extension Dictionary where Key == String, Value == String {
    func bool(_ name: String, default value: Bool) throws(APIError) -> Bool {
        guard let raw = self[name] else { return value }
        switch raw.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw APIError.badParameter(name, "expected true or false")
        }
    }

    func int(_ name: String, default value: Int, range: ClosedRange<Int>) throws(APIError) -> Int {
        guard let raw = self[name] else { return value }
        guard let number = Int(raw), range.contains(number) else {
            throw APIError.badParameter(name, "expected an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }
}
