// LaunchBackoff: the relaunch schedule as a plain value, time advanced by the test.
import FerryApps
import Foundation
import Testing

struct LaunchBackoffTests {
    let start = Date(timeIntervalSince1970: 1_000_000)

    @Test func firstLaunchIsAllowedAtOnce() {
        let backoff = LaunchBackoff()
        #expect(backoff.nextAllowedLaunch() == nil)
        #expect(backoff.currentDelay == .zero)
    }

    @Test func waitsDoubleFromOneSecondUpToTheCap() {
        var backoff = LaunchBackoff()
        var now = start
        var waits: [TimeInterval] = []
        for _ in 0..<12 {
            backoff.recordLaunch(at: now)
            let next = try! #require(backoff.nextAllowedLaunch())
            waits.append(next.timeIntervalSince(now))
            now = next
        }
        #expect(waits == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300])
    }

    @Test func connectingResetsTheSchedule() {
        var backoff = LaunchBackoff(base: .milliseconds(500), cap: .seconds(10))
        backoff.recordLaunch(at: start)
        backoff.recordLaunch(at: start.addingTimeInterval(1))
        #expect(backoff.nextAllowedLaunch() == start.addingTimeInterval(2))
        backoff.recordConnected()
        #expect(backoff.nextAllowedLaunch() == nil)
        #expect(backoff.launchesWithoutConnecting == 0)
        backoff.recordLaunch(at: start.addingTimeInterval(5))
        #expect(backoff.nextAllowedLaunch() == start.addingTimeInterval(5.5))
    }

    @Test func manyLaunchesDoNotOverflow() {
        var backoff = LaunchBackoff()
        for second in 0..<200 { backoff.recordLaunch(at: start.addingTimeInterval(Double(second))) }
        #expect(backoff.currentDelay == .seconds(300))
    }
}
