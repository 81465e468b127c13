// A session given every task at once, as URLSession code often does (`for url in urls {
// session.downloadTask(with: url).resume() }`): how long, how much CPU, and how much memory
// the tasks that wait for a connection hold. Run by Benchmarks/many-tasks.sh, beside curl;
// written in URLSession's spelling, as an app would be.
//
//   many-tasks LIST   (one URL a line; the downloads go to FileManager's temporary folder,
//                      TMPDIR, and are deleted as they arrive)
//
// Prints one line: tasks, seconds to create and resume them, seconds until the last
// completed, failures, RSS before the tasks were made, once all were resumed, and the peak (MiB).
import Ferry
import Foundation

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

/// A line of /proc/self/status in MiB (`VmRSS`, `VmHWM`).
func mebibytes(_ field: String) -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
    return Double(line.split(separator: " ").dropFirst().first ?? "0").map { $0 / 1024 } ?? 0
}

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: many-tasks LIST\n".utf8))
    exit(2)
}
let urls = try String(contentsOfFile: CommandLine.arguments[1], encoding: .utf8)
    .split(separator: "\n").compactMap { URL(string: String($0)) }
let completions = Completions(total: urls.count)
let configuration = URLSessionConfiguration.ephemeral
configuration.httpMaximumConnectionsPerHost = 6
let session = URLSession(configuration: configuration, delegate: completions, delegateQueue: nil)
let baseRSS = mebibytes("VmRSS")
let start = Date()
for url in urls { session.downloadTask(with: url).resume() }
let resumed = Date().timeIntervalSince(start)
let resumedRSS = mebibytes("VmRSS")
let failures = urls.isEmpty ? 0 : completions.wait()
let elapsed = Date().timeIntervalSince(start)
session.finishTasksAndInvalidate()
print(String(format: "tasks %d resumed %.3f s done %.3f s failed %d rss-before %.1f MiB rss-resumed %.1f MiB rss-peak %.1f MiB",
             urls.count, resumed, elapsed, failures, baseRSS, resumedRSS, mebibytes("VmHWM")))
