import FerryCore
import Crypto
package import Foundation
package import NIOCore

/// Digests a download must match: the caller's expected SHA-256 and the server's
/// `Repr-Digest` / `Content-Digest` (RFC 9530, `sha-256` and `sha-512`).
///
/// `Repr-Digest` covers the whole representation, so a resumed download is checked over
/// the whole file; `Content-Digest` covers this response's content only (on a 206, the
/// part that was sent).
package struct IntegrityCheck {
    package enum Algorithm: String { case sha256 = "sha-256", sha512 = "sha-512" }
    package struct Expectation: Equatable {
        package var algorithm: Algorithm
        var digest: [UInt8]
        var source: String
    }

    var wholeFile: [Expectation] = []
    var content: [Expectation] = []

    init(expectedSHA256 hex: String?, response: Response) throws {
        if let hex {
            guard let bytes = [UInt8](hexString: hex), bytes.count == 32 else {
                throw FerryError(.badURL, "expectedSHA256 must be 64 hex digits, got \(hex.count) characters")
            }
            wholeFile.append(Expectation(algorithm: .sha256, digest: bytes, source: "expected SHA-256"))
        }
        // The server's digests are of the bytes it sent; a content-coded body arrives decoded,
        // so they cannot be checked (the expected SHA-256 is of what the app gets, and stays).
        guard !response.isContentCoded else { return }
        let server = Self.serverDigests { response.headers[$0] }
        wholeFile += server.wholeFile
        content += server.content
    }

    /// What the server says the bytes hash to: `Repr-Digest` (the whole representation) and
    /// `Content-Digest` (this response's content), from any header lookup.
    package static func serverDigests(_ field: (String) -> String?) -> (wholeFile: [Expectation], content: [Expectation]) {
        (parse(field("Repr-Digest"), source: "Repr-Digest"), parse(field("Content-Digest"), source: "Content-Digest"))
    }

    var isEmpty: Bool { wholeFile.isEmpty && content.isEmpty }

    /// `sha-256=:base64:, sha-512=:base64:` → the entries we can check; others are ignored.
    static func parse(_ field: String?, source: String) -> [Expectation] {
        guard let field else { return [] }
        return field.split(separator: ",").compactMap { member in
            let parts = member.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let algorithm = Algorithm(rawValue: parts[0].lowercased()),
                parts[1].hasPrefix(":"), parts[1].hasSuffix(":"), parts[1].count >= 2
            else { return nil }
            let base64 = String(parts[1].dropFirst().dropLast())
            guard let data = Data(base64Encoded: base64) else { return nil }
            return Expectation(algorithm: algorithm, digest: [UInt8](data), source: source)
        }
    }
}

/// Hashes bytes as they stream past, with the algorithms an `IntegrityCheck` needs.
package struct StreamingDigest {
    private var sha256: SHA256?
    private var sha512: SHA512?

    package init(algorithms: Set<IntegrityCheck.Algorithm>) {
        if algorithms.contains(.sha256) { sha256 = SHA256() }
        if algorithms.contains(.sha512) { sha512 = SHA512() }
    }

    package var isActive: Bool { sha256 != nil || sha512 != nil }

    package mutating func update(_ buffer: ByteBuffer) {
        guard isActive else { return }
        buffer.withUnsafeReadableBytes { raw in
            sha256?.update(bufferPointer: raw)
            sha512?.update(bufferPointer: raw)
        }
    }

    package func finalize() -> [IntegrityCheck.Algorithm: [UInt8]] {
        var result: [IntegrityCheck.Algorithm: [UInt8]] = [:]
        if let sha256 { result[.sha256] = Array(sha256.finalize()) }
        if let sha512 { result[.sha512] = Array(sha512.finalize()) }
        return result
    }

    /// Throws `integrityCheckFailed` naming the first expectation that is not met.
    package static func verify(_ expectations: [IntegrityCheck.Expectation], against digests: [IntegrityCheck.Algorithm: [UInt8]], url: URL) throws {
        for expectation in expectations where digests[expectation.algorithm] != expectation.digest {
            let got = digests[expectation.algorithm].map { $0.hexString } ?? "nothing"
            throw FerryError(
                .integrityCheckFailed,
                "\(expectation.source) says \(expectation.algorithm.rawValue) \(expectation.digest.hexString), the bytes have \(got); the download was discarded",
                url: url)
        }
    }

    /// Hashes a whole file from disk (used after a resumed download, whose first part
    /// arrived in an earlier attempt).
    static func ofFile(_ url: URL, algorithms: Set<IntegrityCheck.Algorithm>) throws -> [IntegrityCheck.Algorithm: [UInt8]] {
        var digest = StreamingDigest(algorithms: algorithms)
        let file = try InputFile(url: url)
        defer { file.close() }
        var offset: Int64 = 0
        while true {
            let chunk = try file.read(at: offset, upTo: 1 << 20)
            if chunk.readableBytes == 0 { break }
            digest.update(chunk)
            offset += Int64(chunk.readableBytes)
        }
        return digest.finalize()
    }
}

extension Array where Element == UInt8 {
    init?(hexString: String) {
        let chars = Array(hexString.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = Self.nibble(chars[index]), let low = Self.nibble(chars[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self = bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
