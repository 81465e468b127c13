// AsyncHTTPClient on its own, fetching a list of URLs into a folder over N connections per
// host: the HTTP layer under a Ferry `Session`, without the session. Benchmarks/transfer-bench.sh
// runs it beside curl and `ferry get --many --no-batch`, so the Session's small-file figure can
// be read against what its HTTP layer alone does on the same machine at the same moment.
//
// Usage: HTTPClientPeer LIST DIR CONNECTIONS [--as-session]
//   LIST: one URL per line; files saved under DIR by the URL's last path component, as
//   `ferry get --many` names them. --as-session: the files go as a Session's downloads and
//   `ferry get --many --no-batch` go: written private (0600) into a hidden folder of DIR, then
//   renamed into place, made 0644 and measured with stat: the file work of the Session row
//   without the Session.
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

let arguments = CommandLine.arguments
let asSession = arguments.count == 5 && arguments[4] == "--as-session"
guard arguments.count == 4 || asSession, let connections = Int(arguments[3]), connections > 0,
      let list = try? String(contentsOfFile: arguments[1], encoding: .utf8)
else {
    FileHandle.standardError.write(Data("usage: HTTPClientPeer LIST DIR CONNECTIONS [--as-session]\n".utf8))
    exit(2)
}
let folder = arguments[2]
let partials = folder + "/.partial-\(getpid())"
if asSession { mkdir(partials, 0o700) }
let urls = list.split(separator: "\n").map { String($0) }.filter { !$0.isEmpty }

var configuration = HTTPClient.Configuration()
configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
configuration.tracing.tracer = nil
let client = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)

struct Failure: Error {
    var reason: String
}

/// One URL to its file, streamed as the body arrives; the status must be 200.
@Sendable func fetch(_ url: String) async throws {
    let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
    guard response.status == .ok else { throw Failure(reason: "\(url): \(response.status.code)") }
    let name = url.split(separator: "/").last.map(String.init) ?? "index"
    let target = folder + "/" + name
    let path = asSession ? partials + "/" + name : target
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, asSession ? 0o600 : 0o644)
    guard descriptor >= 0 else { throw Failure(reason: "cannot create \(path)") }
    defer {
        close(descriptor)
        if asSession {
            var info = stat()
            _ = rename(path, target) == 0 && stat(target, &info) == 0 && chmod(target, 0o644) == 0
        }
    }
    for try await chunk in response.body {
        try chunk.withUnsafeReadableBytes { bytes in
            var written = 0
            while written < bytes.count {
                let count = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
                guard count > 0 else { throw Failure(reason: "cannot write \(path)") }
                written += count
            }
        }
    }
}

/// Fetches every URL, four requests queued per connection at a time (as `ferry get --many`
/// does); returns how many failed, having printed the first failure.
func fetchAll(_ urls: [String], window: Int) async -> Int {
    await withTaskGroup(of: String?.self) { group in
        var (running, failed) = (0, 0)
        func count(_ failure: String?) {
            guard let failure else { return }
            failed += 1
            if failed == 1 { FileHandle.standardError.write(Data("\(failure)\n".utf8)) }
        }
        for url in urls {
            if running >= window, let outcome = await group.next() {
                running -= 1
                count(outcome)
            }
            group.addTask {
                do { try await fetch(url); return nil } catch let failure as Failure { return failure.reason } catch { return "\(url): \(error)" }
            }
            running += 1
        }
        for await outcome in group { count(outcome) }
        return failed
    }
}

let failed = await fetchAll(urls, window: connections * 4)
try? await client.shutdown().get()
if asSession { rmdir(partials) }
if failed > 0 {
    FileHandle.standardError.write(Data("\(failed) of \(urls.count) failed\n".utf8))
    exit(1)
}
