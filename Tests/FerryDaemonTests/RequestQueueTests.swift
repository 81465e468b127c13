@testable import FerryDaemon
import FerryProtocol
import Testing

/// A connection's waiting requests (`RequestQueue`): taken all at once, in order, so the
/// submissions that arrived during a commit share the next one.
@Suite("Request queue")
struct RequestQueueTests {
    @Test("reads added while nobody takes come out as one batch, in order; a finished queue gives what is left, then nil")
    func batchesInOrder() async {
        let queue = RequestQueue()
        queue.add([(1, .status), (2, .listSessions)])
        queue.add([(3, .metrics)])
        let first = await queue.next()
        #expect(first?.map(\.id) == [1, 2, 3])
        queue.add([(4, .status)])
        queue.finish()
        #expect(await queue.next()?.map(\.id) == [4])
        #expect(await queue.next() == nil)
    }

    @Test("a taker that waits wakes on the next read")
    func waitsForARead() async {
        let queue = RequestQueue()
        async let taken = queue.next()
        try? await Task.sleep(for: .milliseconds(50))
        queue.add([(7, .status)])
        #expect(await taken?.map(\.id) == [7])
    }
}
