import Ferry
import FerryEngine
import Foundation

/// Watches one engine transfer for the CLI: drives the progress bar, remembers the
/// response, its validator and where a download resumed, and refuses error statuses
/// (so an error page never overwrites a download).
final class CLIObserver: TransferObserver, @unchecked Sendable {  // state behind `lock`
    struct Snapshot {
        var response: Response?
        var validator: String?
        var resumedFrom: Int64?
        var refusedStatus: Int?
        var written: Int64 = 0
        var expected: Int64 = -1
    }

    let bar: ProgressBar
    /// Refuse responses with status ≥ 400 (downloads) instead of taking their body.
    let refuseErrorStatuses: Bool
    private let lock = NSLock()
    private var state = Snapshot()

    init(bar: ProgressBar, refuseErrorStatuses: Bool) {
        self.bar = bar
        self.refuseErrorStatuses = refuseErrorStatuses
    }

    var snapshot: Snapshot { lock.withLock { state } }

    func transferDidReceive(response: Response) async -> Bool {
        let refuse = refuseErrorStatuses && response.statusCode >= 400
        lock.withLock {
            state.response = response
            if refuse { state.refusedStatus = response.statusCode }
            if response.statusCode == 200 || response.statusCode == 206 {
                state.validator = Self.validator(of: response)
            }
        }
        return !refuse
    }

    func transferDidWrite(bytes: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        lock.withLock {
            state.written = totalBytesWritten
            state.expected = totalBytesExpectedToWrite
        }
        bar.update(done: totalBytesWritten, total: totalBytesExpectedToWrite)
    }

    func transferDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        bar.update(done: totalBytesSent, total: totalBytesExpectedToSend)
    }

    func transferDidResume(atOffset offset: Int64, expectedTotal: Int64) {
        lock.withLock { state.resumedFrom = offset }
        bar.setBase(offset)
    }

    func transferWillRetry(after delay: Duration, reason: String) {
        bar.note("ferry: \(reason); retrying in \(String(format: "%.1f", ProgressBar.seconds(delay))) s")
    }

    /// A strong ETag, else Last-Modified: what `If-Range` may carry.
    static func validator(of response: Response) -> String? {
        if let etag = response.etag, !etag.hasPrefix("W/") { return etag }
        return response.lastModified
    }
}
