// Runs curl as the client in tests, without blocking a Swift concurrency thread.
import Crypto
import FerryTestSupport
import Foundation

/// What a curl run produced.
struct CurlResult {
    var exitCode: Int32
    /// The body curl wrote (`-o`), read back from a temp file.
    var body: [UInt8]
    /// Response head(s) curl dumped (`-D`), informational ones included.
    var headers: String
    var stderr: String

    var sha256: String { Digest.hex(SHA256.hash(data: body)) }

    /// Status of the last response head.
    var status: Int? {
        heads.last.flatMap { head in head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } }
    }

    /// Each response head as lines.
    var heads: [[String]] {
        headers.replacingOccurrences(of: "\r", with: "").components(separatedBy: "\n\n")
            .map { $0.split(separator: "\n").map(String.init) }.filter { !$0.isEmpty }
    }

    /// A header of the last response head, case-insensitive.
    func header(_ name: String) -> String? { header(name, inHead: heads.count - 1) }

    func header(_ name: String, inHead index: Int) -> String? {
        guard heads.indices.contains(index) else { return nil }
        let prefix = name.lowercased() + ":"
        return heads[index].first { $0.lowercased().hasPrefix(prefix) }
            .map { String($0.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces) }
    }
}

enum Digest {
    static func hex<D: Sequence>(_ d: D) -> String where D.Element == UInt8 {
        d.map { String(format: "%02x", $0) }.joined()
    }
}

/// Runs `curl -s -S -D <headers> -o <body> ARGS…` and waits for it without blocking a thread.
func curl(_ args: [String]) async throws -> CurlResult {
    let dir = FileManager.default.temporaryDirectory
    let id = UUID().uuidString
    let bodyURL = dir.appendingPathComponent("curl-body-\(id)")
    let headURL = dir.appendingPathComponent("curl-head-\(id)")
    let errURL = dir.appendingPathComponent("curl-err-\(id)")
    defer { for u in [bodyURL, headURL, errURL] { try? FileManager.default.removeItem(at: u) } }
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let errHandle = try FileHandle(forWritingTo: errURL)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-S", "--max-time", "30", "-D", headURL.path, "-o", bodyURL.path] + args
    process.standardError = errHandle
    process.standardOutput = FileHandle.nullDevice
    let status = try await process.runToExit()
    try? errHandle.close()
    return CurlResult(
        exitCode: status,
        body: (try? [UInt8](Data(contentsOf: bodyURL))) ?? [],
        headers: (try? String(contentsOf: headURL, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
}

/// Writes `bytes` to a fresh temp file and returns its path (in a folder removed when the
/// test process exits).
func tempFile(_ bytes: [UInt8]) throws -> String {
    let url = try TestFiles.makeTemporaryDirectory().appendingPathComponent("body")
    try Data(bytes).write(to: url)
    return url.path
}
