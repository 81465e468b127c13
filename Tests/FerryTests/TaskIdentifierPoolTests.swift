@testable import Ferry
import Testing

/// Background task identifiers reserved in blocks that double while tasks are made in a row.
@Suite("Task identifier pool")
struct TaskIdentifierPoolTests {
    @Test("blocks double (1, 2, 4 … 64) while refills come within a second, and start again at one after a pause")
    func blocks() {
        var pool = TaskIdentifierPool()
        let start = ContinuousClock.now
        var given: [Int] = []
        var reserved = 1
        var sizes: [Int] = []
        for step in 0..<200 {
            if let kept = pool.take() { given.append(kept); continue }
            let now = start + .milliseconds(step)
            let count = pool.blockToReserve(now: now)
            sizes.append(count)
            pool.refill(first: reserved, count: count, now: now)
            given.append(reserved)
            reserved += count
        }
        #expect(given == Array(1...200), "each identifier once, in order")
        #expect(sizes == [1, 2, 4, 8, 16, 32, 64, 64, 64], "\(sizes)")
        let later = start + .seconds(5)
        while pool.take() != nil {}
        #expect(pool.blockToReserve(now: later) == 1, "after a pause, one at a time again")
    }
}
