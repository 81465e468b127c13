// A session given every task at once, as URLSession code often does (`for url in urls {
// session.downloadTask(with: url).resume() }`): how long, how much CPU, and how much memory
// the tasks that wait for a connection hold. Run by Benchmarks/many-tasks.sh, beside curl;
// written in URLSession's spelling, as an app would be.
//
//   many-tasks LIST [ROUNDS]   (one URL a line; the downloads go to FileManager's temporary
//                               folder, TMPDIR, and are deleted as they arrive; ROUNDS, 1 by
//                               default: the whole list again, on the same session, once the
//                               round before has completed)
//
// Prints a line a round: tasks, seconds to create and resume them, seconds until the last
// completed, failures, RSS (MiB) before the tasks were made, once all were resumed, once
// all completed, and the process's peak.
import Ferry
import Foundation
import Synchronization

final class Completions: NSObject, @unchecked Sendable {  // state behind `lock`
    private let lock = NSLock()
    private var done = 0
    private var failed = 0
    private let total: Int
    private let allDone = DispatchSemaphore(value: 0)

    init(total: Int) { self.total = total }

    /// Waits until every task completed; how many failed.
    func wait() -> Int {
        allDone.wait()
        return lock.withLock { failed }
    }
}

extension Completions: URLSessionDownloadDelegate {
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        try? FileManager.default.removeItem(at: location)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let last = lock.withLock {
            done += 1
            if error != nil { failed += 1 }
            return done == total
        }
        if last { allDone.signal() }
    }
}

/// The session's delegate, for every round: hands each call to that round's ``Completions``.
final class Delegator: NSObject, URLSessionDownloadDelegate, Sendable {
    let target = Mutex<Completions?>(nil)

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        target.withLock { $0 }?.urlSession(session, downloadTask: downloadTask, didFinishDownloadingTo: location)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        target.withLock { $0 }?.urlSession(session, task: task, didCompleteWithError: error)
    }
}

/// A line of /proc/self/status in MiB (`VmRSS`, `VmHWM`).
func mebibytes(_ field: String) -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
    return Double(line.split(separator: " ").dropFirst().first ?? "0").map { $0 / 1024 } ?? 0
}

guard (2...3).contains(CommandLine.arguments.count), let rounds = Int(CommandLine.arguments.dropFirst(2).first ?? "1"), rounds > 0 else {
    FileHandle.standardError.write(Data("usage: many-tasks LIST [ROUNDS]\n".utf8))
    exit(2)
}
let urls = try String(contentsOfFile: CommandLine.arguments[1], encoding: .utf8)
    .split(separator: "\n").compactMap { URL(string: String($0)) }
let configuration = URLSessionConfiguration.ephemeral
configuration.httpMaximumConnectionsPerHost = 6
// One session for every round: what it keeps of tasks that completed shows as RSS that grows
// from one round to the next.
var session: URLSession?
for round in 1...rounds {
    let completions = Completions(total: urls.count)
    let current = session ?? URLSession(configuration: configuration, delegate: Delegator(), delegateQueue: nil)
    session = current
    (current.delegate as? Delegator)?.target.withLock { $0 = completions }
    let baseRSS = mebibytes("VmRSS")
    let start = Date()
    for url in urls { current.downloadTask(with: url).resume() }
    let resumed = Date().timeIntervalSince(start)
    let resumedRSS = mebibytes("VmRSS")
    let failures = urls.isEmpty ? 0 : completions.wait()
    let elapsed = Date().timeIntervalSince(start)
    print(String(format: "round %d tasks %d resumed %.3f s done %.3f s failed %d rss-before %.1f MiB rss-resumed %.1f MiB rss-after %.1f MiB rss-peak %.1f MiB",
                 round, urls.count, resumed, elapsed, failures, baseRSS, resumedRSS, mebibytes("VmRSS"), mebibytes("VmHWM")))
}
session?.finishTasksAndInvalidate()
