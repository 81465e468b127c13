@testable import Ferry
import Testing

/// The library's side of pacing as a value: when ferryd is told what was taken, and when the
/// router waits for the delegate.
@Suite("DeliveryPacing")
struct DeliveryPacingTests {
    @Test("ferryd is told the running total every reportEvery messages, only when it paces, from zero on each connection")
    func reports() {
        var pacing = DeliveryPacing()
        pacing.connected(paced: false)
        #expect((0..<100).compactMap { _ in pacing.took() }.isEmpty, "an older ferryd is told nothing")
        pacing.connected(paced: true)
        let told = (0..<(DeliveryPacing.reportEvery * 3 + 5)).compactMap { _ in pacing.took() }
        #expect(told == [1, 2, 3].map { $0 * DeliveryPacing.reportEvery })
        pacing.connected(paced: true)
        #expect(pacing.taken == 0)
    }

    @Test("the router waits once the delegate has inFlightLimit waiting, and goes on at half of it; progress is dropped meanwhile")
    func delegateWindow() {
        var pacing = DeliveryPacing()
        for _ in 0..<(DeliveryPacing.inFlightLimit - 1) { pacing.eventBegan(bytes: 0) }
        #expect(!pacing.delegateIsBehind)
        let first = pacing.progressBegan()
        #expect(first, "one more may go: a progress report")
        #expect(pacing.delegateIsBehind)
        let second = pacing.progressBegan()
        #expect(!second, "behind: progress is dropped")
        pacing.progressEnded()
        #expect(!pacing.delegateCaughtUp, "one less is not half")
        for _ in 0..<(DeliveryPacing.inFlightLimit / 2 - 1) { pacing.eventEnded(bytes: 0) }
        #expect(pacing.delegateCaughtUp)
        #expect(pacing.events == DeliveryPacing.inFlightLimit / 2)
    }

    @Test("ferryd is also told after a quarter of its byte window of body, and the router waits while the delegate holds inFlightByteLimit of body")
    func bodyBytes() {
        var pacing = DeliveryPacing()
        pacing.connected(paced: true)
        let chunk = 256 << 10
        let told = (0..<8).compactMap { _ in pacing.took(bytes: chunk) }
        let perReport = DeliveryPacing.reportEveryBytes / chunk
        #expect(told == [perReport, perReport * 2], "every \(perReport) chunks of 256 KiB, long before \(DeliveryPacing.reportEvery) messages")
        #expect(DeliveryPacing.reportEveryBytes * 4 <= DeliveryPacing.byteWindow, "ferryd hears before its byte window is full")

        let events = DeliveryPacing.inFlightByteLimit / chunk
        for _ in 0..<(events - 1) { pacing.eventBegan(bytes: chunk) }
        #expect(!pacing.delegateIsBehind)
        pacing.eventBegan(bytes: chunk)
        #expect(pacing.delegateIsBehind, "\(events) events of 256 KiB: the byte limit, far below the count's")
        for _ in 0..<(events / 2 - 1) { pacing.eventEnded(bytes: chunk) }
        #expect(!pacing.delegateCaughtUp)
        pacing.eventEnded(bytes: chunk)
        #expect(pacing.delegateCaughtUp && pacing.eventBytes == DeliveryPacing.inFlightByteLimit / 2)
    }
}
