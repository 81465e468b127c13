// How a batch hands out connections: per host, in all, in turn, and what a refusal gives up.
// Pure logic, no sockets (the network side is in BatchDownloadTests).
@testable import FerryBatch
import Testing

@Suite struct ConnectionPlanTests {
    private func host(_ n: Int) -> ConnectionPlan.HostKey { .init(host: "h\(n)", port: 80, secure: false) }

    private func plan(perHost: Int, total: Int, items: [Int: Int]) -> ConnectionPlan {
        var plan = ConnectionPlan(perHost: perHost, total: total)
        var index = 0
        for n in items.keys.sorted() {
            for _ in 0..<items[n]! {
                plan.add(index, to: host(n))
                index += 1
            }
        }
        return plan
    }

    @Test func oneHostGetsAtMostPerHostAndNoMoreThanItsItems() {
        var many = plan(perHost: 3, total: 64, items: [1: 10])
        #expect(many.grants() == Array(repeating: host(1), count: 3))
        #expect(many.grants().isEmpty)
        var few = plan(perHost: 6, total: 64, items: [1: 2])
        #expect(few.grants().count == 2)
    }

    @Test func theTotalCapIsSharedInTurnAndAFreedPlaceGoesToTheNextHost() {
        var plan = plan(perHost: 3, total: 4, items: [1: 4, 2: 4, 3: 4, 4: 4, 5: 4])
        #expect(plan.grants() == [host(1), host(2), host(3), host(4)])
        #expect(plan.open == 4)
        // Host 1's connection finds its queue... not empty, but the turn is host 5's.
        plan.ended(host(1))
        #expect(plan.grants() == [host(5)])
        plan.ended(host(2))
        #expect(plan.grants() == [host(1)])
        #expect(plan.open == 4)
    }

    @Test func aRefusalWithOthersOpenWaitsAndTheLastOneGivesUpTheQueue() {
        var plan = plan(perHost: 2, total: 8, items: [1: 5])
        #expect(plan.grants().count == 2)
        #expect(plan.failed(host(1)).isEmpty, "the other connection drains the queue")
        #expect(plan.grants().isEmpty, "no new connection to a host that just refused")
        #expect(plan.failed(host(1)) == [0, 1, 2, 3, 4])
        #expect(plan.grants().isEmpty)
        #expect(plan.open == 0)
    }

    @Test func aHostThatAnsweredBeforeGetsOneMoreTry() {
        var plan = plan(perHost: 1, total: 8, items: [1: 3])
        #expect(plan.grants() == [host(1)])
        plan.connected(host(1))
        #expect(plan.next(host(1)) == 0)
        #expect(plan.failed(host(1)).isEmpty)
        #expect(plan.grants() == [host(1)], "one more try")
        #expect(plan.failed(host(1)) == [1, 2], "then the rest is given up")
    }

    @Test func aRequeuedItemComesFirstAndTheLastConnectionGoneClearsARefusal() {
        var plan = plan(perHost: 2, total: 8, items: [1: 3])
        _ = plan.grants()
        plan.connected(host(1))
        #expect(plan.next(host(1)) == 0)
        #expect(plan.failed(host(1)).isEmpty)  // the second connection was refused
        plan.requeue(0, host(1))
        plan.ended(host(1))  // and the first closed: nobody is left to drain the queue
        #expect(plan.grants() == [host(1), host(1)], "tried again, as many as the items allow")
        #expect(plan.next(host(1)) == 0)
    }
}
