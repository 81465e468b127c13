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
        for _ in 0..<(DeliveryPacing.inFlightLimit - 1) { pacing.eventBegan() }
        #expect(!pacing.delegateIsBehind)
        let first = pacing.progressBegan()
        #expect(first, "one more may go: a progress report")
        #expect(pacing.delegateIsBehind)
        let second = pacing.progressBegan()
        #expect(!second, "behind: progress is dropped")
        pacing.progressEnded()
        #expect(!pacing.delegateCaughtUp, "one less is not half")
        for _ in 0..<(DeliveryPacing.inFlightLimit / 2 - 1) { pacing.eventEnded() }
        #expect(pacing.delegateCaughtUp)
        #expect(pacing.events == DeliveryPacing.inFlightLimit / 2)
    }
}
