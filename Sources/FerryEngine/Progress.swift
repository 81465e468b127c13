import NIOConcurrencyHelpers

/// Shared, lock-protected counters of one transfer: what moved and when, so the
/// watchdog can tell an idle transfer and the observer gets coalesced progress.
final class TransferProgress: Sendable {
    private struct State {
        var lastActivity = ContinuousClock.now
        var sent: Int64 = 0
        var expectedToSend: Int64 = -1
        var sentReported: Int64 = 0
        var sentReportedAt = ContinuousClock.now
        var written: Int64 = 0
        var expectedToWrite: Int64 = -1
        var writtenReported: Int64 = 0
        var writtenReportedAt = ContinuousClock.now
    }

    /// How often progress is reported at most: smooth for a progress bar, cheap per chunk.
    static let interval: Duration = .milliseconds(100)

    private let state = NIOLockedValueBox(State())
    private let observer: any TransferObserver

    init(observer: any TransferObserver) {
        self.observer = observer
    }

    func touch() {
        state.withLockedValue { $0.lastActivity = .now }
    }

    var idleFor: Duration {
        state.withLockedValue { ContinuousClock.now - $0.lastActivity }
    }

    var totals: (sent: Int64, written: Int64) {
        state.withLockedValue { ($0.sent, $0.written) }
    }

    // MARK: Upload

    func startSending(from offset: Int64, expected: Int64) {
        state.withLockedValue {
            $0.sent = offset
            $0.sentReported = offset
            $0.expectedToSend = expected
            $0.lastActivity = .now
        }
    }

    func didSend(_ count: Int, final: Bool = false) {
        // Compute the report under the lock, call the observer outside it.
        let report: (Int64, Int64, Int64)? = state.withLockedValue { s in
            s.sent += Int64(count)
            s.lastActivity = .now
            let now = ContinuousClock.now
            guard final || now - s.sentReportedAt >= Self.interval else { return nil }
            guard final == false || s.sent != s.sentReported || s.sent == 0 else { return nil }
            let delta = s.sent - s.sentReported
            s.sentReported = s.sent
            s.sentReportedAt = now
            return (delta, s.sent, s.expectedToSend)
        }
        if let (delta, total, expected) = report {
            observer.transferDidSend(bytes: delta, totalBytesSent: total, totalBytesExpectedToSend: expected)
        }
    }

    // MARK: Download

    func startWriting(from offset: Int64, expected: Int64) {
        state.withLockedValue {
            $0.written = offset
            $0.writtenReported = offset
            $0.expectedToWrite = expected
            $0.lastActivity = .now
        }
    }

    func didWrite(_ count: Int, final: Bool = false) {
        let report: (Int64, Int64, Int64)? = state.withLockedValue { s in
            s.written += Int64(count)
            s.lastActivity = .now
            let now = ContinuousClock.now
            guard final || now - s.writtenReportedAt >= Self.interval else { return nil }
            guard final == false || s.written != s.writtenReported || s.written == 0 else { return nil }
            let delta = s.written - s.writtenReported
            s.writtenReported = s.written
            s.writtenReportedAt = now
            return (delta, s.written, s.expectedToWrite)
        }
        if let (delta, total, expected) = report {
            observer.transferDidWrite(bytes: delta, totalBytesWritten: total, totalBytesExpectedToWrite: expected)
        }
    }
}
