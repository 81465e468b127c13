@testable import Ferry
import FerryTestSupport
import Foundation
import Testing

/// A background session remembers the tasks that ended in it only until ferryd has their end
/// acknowledged (``EndedTasks``): long enough that a reconnect does not mirror them again, not
/// for the session's life.
@Suite("Ended background tasks are forgotten once ferryd has their end", .serialized, .timeLimit(.minutes(2)))
struct EndedTasksTests {
    @Test("a task is kept from its end until an acknowledgement reaches the event that ended it in ferryd")
    func keptUntilAcknowledged() {
        var ended = EndedTasks()
        ended.settled(7, bySequence: 12)  // its completion was handed over; its callbacks still run
        ended.ended(7)
        ended.settled(9, bySequence: 15)
        ended.ended(9)
        ended.ended(4)  // cancelled here: ferryd's event for it has not come yet
        #expect(ended.contains(7) && ended.contains(9) && ended.contains(4))
        ended.acknowledged(upTo: 11)
        #expect(ended.count == 3)
        ended.acknowledged(upTo: 12)
        #expect(!ended.contains(7) && ended.contains(9) && ended.count == 2)
        ended.settled(4, bySequence: 18)  // ferryd's `cancelled` for it, for a task gone from here
        ended.acknowledged(upTo: 20)
        #expect(ended.count == 0)
        ended.acknowledged(upTo: 21)  // nothing left: nothing happens
        #expect(ended.count == 0)
    }

    @Test("300 downloads through ferryd, a tenth cancelled as they run: each completes once (a cancel crossing ferryd's end completed twice), and once acknowledged the session remembers none")
    func forgottenAfterAcknowledgement() async throws {
        try await withDaemonAndServer { daemon, server in
            let delegate = CompletionsByTask()
            let session = try Session.background(daemon.configuration("bg.ended"), delegate: delegate)
            let count = 300
            var tasks: [SessionTask] = []
            for seed in 1...count {
                let task = session.downloadTask(with: server.url("/bytes/64?seed=\(seed)&stallAfter=32&stallSeconds=\(seed % 10 == 0 ? 5 : 0)"))
                task.resume()
                tasks.append(task)
            }
            for (index, task) in tasks.enumerated() where (index + 1) % 10 == 0 { task.cancel() }  // the stalled ones
            try await poll(until: "the delegate to hear of all \(count) completions", timeout: .seconds(60), every: .milliseconds(100),
                           observed: "\(delegate.tasks.count) heard") {
                delegate.tasks.count >= count
            }
            let heard = delegate.tasks
            let twice = Dictionary(grouping: heard, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
            #expect(Set(heard).count == count && twice.isEmpty, "each task once; twice: \(twice)")
            try await poll(until: "the session to forget its ended tasks", timeout: .seconds(10), every: .milliseconds(50),
                           observed: "\(session.endedTaskCount) remembered") {
                session.endedTaskCount == 0
            }
            session.finishTasksAndInvalidate()
        }
    }
}
