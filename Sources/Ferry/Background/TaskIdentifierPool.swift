/// Task identifiers ferryd reserved for a background session and the library has not given
/// yet. Making a task needs its identifier at once (a relaunched process finds the task under
/// it), and each reservation is a round trip with a commit: a process making tasks in a row
/// asks for blocks that double (1, 2, 4 … 64), one making a task now and then asks for one at
/// a time. Identifiers never given are skipped, never reused.
///
/// ```swift
/// var pool = TaskIdentifierPool()
/// if let kept = pool.take() { return kept }
/// let count = pool.blockToReserve(now: .now)   // ask ferryd for `count`; it answers `first`
/// pool.refill(first: first, count: count, now: .now)
/// return first
/// ```
struct TaskIdentifierPool {
    private var next = 0
    private var end = 0
    private var block = 1
    private var lastRefill: ContinuousClock.Instant?
    /// A block grows only while tasks are made this close together.
    static let run: Duration = .seconds(1)
    static let largestBlock = 64

    /// The next identifier kept, if any.
    mutating func take() -> Int? {
        guard next < end else { return nil }
        defer { next += 1 }
        return next
    }

    /// How many identifiers to reserve now that none is kept: twice the last block when the
    /// last refill was recent, else one.
    mutating func blockToReserve(now: ContinuousClock.Instant) -> Int {
        if let lastRefill, now - lastRefill < Self.run {
            block = min(block * 2, Self.largestBlock)
        } else {
            block = 1
        }
        return block
    }

    /// `count` identifiers from `first` were reserved; the caller takes `first` itself.
    mutating func refill(first: Int, count: Int, now: ContinuousClock.Instant) {
        next = first + 1
        end = first + count
        lastRefill = now
    }
}
