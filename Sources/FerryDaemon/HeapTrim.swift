#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Hands freed heap back to the system when clients leave: at most once a second, and once
/// more a second after the last of a burst.
///
/// glibc keeps what ferryd frees in its arenas; after a client that pipelined thousands of
/// requests, RSS would stay at its peak for the rest of ferryd's life. `malloc_trim` returns
/// the free pages (about a millisecond on ferryd's heap, hence the rate).
struct HeapTrim: Sendable {
    static let interval = Duration.seconds(1)
    private var last: ContinuousClock.Instant?
    private var trailingScheduled = false

    enum Action: Equatable, Sendable {
        case none
        /// Trim again after ``interval`` (`trailingTrim()`), for what the burst freed since.
        case trimLater
    }

    /// A client left: trims now unless it did within the interval.
    mutating func clientLeft(now: ContinuousClock.Instant = .now) -> Action {
        if let last, now - last < Self.interval {
            if trailingScheduled { return .none }
            trailingScheduled = true
            return .trimLater
        }
        trim(now: now)
        return .none
    }

    /// The trim scheduled by `.trimLater`.
    mutating func trailingTrim(now: ContinuousClock.Instant = .now) {
        trailingScheduled = false
        trim(now: now)
    }

    private mutating func trim(now: ContinuousClock.Instant) {
        last = now
        _ = Self.mallocTrim?(0)
    }

    /// glibc's `malloc_trim`, looked up at run time: Swift's Glibc module does not export it,
    /// and a libc without it (musl) simply keeps its pages.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()
}
