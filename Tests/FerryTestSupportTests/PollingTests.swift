// poll and eventually: a wait ends when its condition holds, and fails, saying what it
// waited for and what it saw, when time runs out; BuiltProducts finds the built programs.
@testable import FerryTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Polling and built products")
struct PollingTests {
    @Test func returnsOnceTheConditionHolds() async throws {
        // 30 s: a bound, not a speed. In the parallel run, suites that wait for a process
        // synchronously (ImageMagick's convert, tmux) can hold both of Swift's pool threads
        // for seconds; a fresh-clone run saw 8.5 s pass between two 1 ms checks.
        let checks = Mutex(0)
        try await poll(until: "the third check", timeout: .seconds(30), every: .milliseconds(1)) {
            checks.withLock { $0 += 1; return $0 == 3 }
        }
        #expect(checks.withLock { $0 } == 3)
        let value = try await eventually("a value", timeout: .seconds(30), every: .milliseconds(1)) {
            checks.withLock { $0 += 1; return $0 >= 5 ? "found at \($0)" : nil }
        }
        #expect(value == "found at 5")
    }

    @Test func aTimeOutSaysWhatItWaitedForAndWhatItSaw() async throws {
        var seen = 0
        let started = ContinuousClock.now
        let error = await #expect(throws: PollTimeout.self) {
            try await poll(until: "a count of ten", timeout: .milliseconds(200), every: .milliseconds(20), observed: "count \(seen)") {
                seen += 1
                return false
            }
        }
        let elapsed = ContinuousClock.now - started
        // Bounded by the time-out (plus the stalls of a parallel run on two cores).
        #expect(elapsed >= .milliseconds(200) && elapsed < .seconds(30), "\(elapsed)")
        let timeout = try #require(error)
        #expect(timeout.checks == seen && seen >= 1 && seen <= 12, "checked at once, every 20 ms and at the deadline: \(seen)")
        #expect(timeout.description.hasPrefix("timed out after "), "\(timeout)")
        #expect(timeout.description.contains("(limit 0.2 s, \(seen) checks) waiting for a count of ten (PollingTests.swift:"), "\(timeout)")
        #expect(timeout.description.hasSuffix("; last observed: count \(seen)"), "\(timeout)")
    }

    @Test func aConditionThatThrowsEndsTheWaitWithItsError() async throws {
        struct Exited: Error {}
        await #expect(throws: Exited.self) {
            try await eventually("a line from a process that exited", timeout: .seconds(5)) { () throws -> String? in throw Exited() }
        }
    }

    @Test func durationsAreShownInSeconds() {
        #expect(PollTimeout(what: "x", timeout: .seconds(5), elapsed: .milliseconds(5012), checks: 1, observed: "", location: "A.swift:1")
            .description == "timed out after 5.01 s (limit 5 s, 1 checks) waiting for x (A.swift:1)")
        #expect(PollTimeout(what: "x", timeout: .milliseconds(250), elapsed: .milliseconds(300), checks: 2, observed: "y", location: "A.swift:1")
            .description == "timed out after 0.3 s (limit 0.25 s, 2 checks) waiting for x (A.swift:1); last observed: y")
    }

    @Test func builtProductsFindsAnExecutableOrSaysWhereItLooked() throws {
        // FerryTestSupportTests builds no executable of its own; the test runner is one.
        let runner = try #require(try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let name = (runner as NSString).lastPathComponent
        #expect(try BuiltProducts.path(of: name) == runner)
        #expect(try BuiltProducts.folder(of: name) == (runner as NSString).deletingLastPathComponent)
        let missing = #expect(throws: BuiltProductMissing.self) { try BuiltProducts.path(of: "no-such-program") }
        #expect(missing?.description.contains("no-such-program was not found among the build products (looked in \((runner as NSString).deletingLastPathComponent)") == true,
                "\(String(describing: missing))")
    }
}
