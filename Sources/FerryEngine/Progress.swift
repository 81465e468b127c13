import FerryCore
import NIOConcurrencyHelpers

/// Shared, lock-protected counters of one transfer: what moved and when, so the
/// watchdog can tell an idle transfer and the observer gets coalesced progress.
final class TransferProgress: Sendable {
    /// One direction's running total and what was last reported of it.
    struct Counter {
        var total: Int64 = 0
        var expected: Int64 = -1
        var reported: Int64 = 0
        /// nil until the first bytes are reported: they go out at once, for they are what
        /// ferryd stores a download's resume point with. Held back for the interval, a
        /// transfer killed within its first 100 ms had to start again from byte 0, every time.
        var reportedAt: ContinuousClock.Instant?

        mutating func start(at offset: Int64, expected: Int64) {
            total = offset
            reported = offset
            reportedAt = nil
            self.expected = expected
        }

        /// Adds `count`; returns (delta, total, expected) when a report is due: the first
        /// bytes at once, then at most every `interval`, and always for `final` unless that
        /// total was already reported.
        mutating func add(_ count: Int, final: Bool, now: ContinuousClock.Instant) -> (Int64, Int64, Int64)? {
            total += Int64(count)
            guard final || reportedAt.map({ now - $0 >= TransferProgress.interval }) ?? (total > reported) else { return nil }
            guard !final || total != reported || total == 0 else { return nil }
            let delta = total - reported
            reported = total
            reportedAt = now
            return (delta, total, expected)
        }
    }

    private struct State {
        var lastActivity = ContinuousClock.now
        var sent = Counter()
        var written = Counter()
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

    /// When a byte last moved (or the transfer last did something that counts as moving).
    var lastActivity: ContinuousClock.Instant {
        state.withLockedValue { $0.lastActivity }
    }

    var totals: (sent: Int64, written: Int64) {
        state.withLockedValue { ($0.sent.total, $0.written.total) }
    }

    func startSending(from offset: Int64, expected: Int64) {
        state.withLockedValue {
            $0.sent.start(at: offset, expected: expected)
            $0.lastActivity = .now
        }
    }

    func startWriting(from offset: Int64, expected: Int64) {
        state.withLockedValue {
            $0.written.start(at: offset, expected: expected)
            $0.lastActivity = .now
        }
    }

    // Compute the report under the lock, call the observer outside it.

    func didSend(_ count: Int, final: Bool = false) {
        let report = state.withLockedValue { s -> (Int64, Int64, Int64)? in
            let now = ContinuousClock.now
            s.lastActivity = now
            return s.sent.add(count, final: final, now: now)
        }
        if let (delta, total, expected) = report {
            observer.transferDidSend(bytes: delta, totalBytesSent: total, totalBytesExpectedToSend: expected)
        }
    }

    func didWrite(_ count: Int, final: Bool = false) {
        let report = state.withLockedValue { s -> (Int64, Int64, Int64)? in
            let now = ContinuousClock.now
            s.lastActivity = now
            return s.written.add(count, final: final, now: now)
        }
        if let (delta, total, expected) = report {
            observer.transferDidWrite(bytes: delta, totalBytesWritten: total, totalBytesExpectedToWrite: expected)
        }
    }
}
