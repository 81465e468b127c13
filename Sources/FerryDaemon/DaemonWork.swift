import FerryCore
import FerryEngine
import FerryProtocol
import FerryStore
import Foundation
import Synchronization

/// Work ferryd does beside answering one request. Each job runs as a child task of the work
/// service (`JobLanes`), so nothing outlives the daemon and stopping waits for all of it: no
/// unstructured tasks.
enum DaemonJob: Sendable {
    /// One attempt of a stored task, with its session's record as the scheduling pass read it
    /// (nil: read it when the attempt starts); `control` stops it early (suspend, cancel, shutdown).
    case attempt(TaskRecord, SessionRecord?, StopControl)
    /// One client connection's requests, in order, until it closes.
    case serve(ClientConnection, RequestQueue)
    /// A connection sent nothing for the idle time-out: closed unless it holds a session.
    case idleCheck(ClientConnection)
    /// A launched app that has not taken its events: look again at `deadline`, unless stopped.
    case launchTimer(session: String, deadline: Date, StopControl)
    /// A second look, after a grace, at running transfers whose link a reading found gone.
    case routeCheck(deadline: Date)
    /// A cancelled upload's resource, given up on the server (bounded; the reply did not wait).
    case discardUpload(Transfer, session: String, task: Int)
    /// A transfer's progress: live to the session's clients, and/or saved as its resume point.
    case progress(TaskKey, TaskReporter.Snapshot, live: Bool, persist: Bool)
    /// Freed heap goes back to the system a second after a burst of clients left (`HeapTrim`).
    case trimHeap
    /// A client asked ferryd to stop.
    case stop
}

/// Where jobs wait for the work service: in lanes, each the stream of a task group of its own,
/// filled in turn. The Swift runtime keeps a task group's children in a list that it walks to
/// add or remove one, so one group holding a thousand running transfers made every job's
/// start and end (each progress report is one) a walk over all of them: 160 µs a job beside
/// 10,000 children, 2 µs beside 10 (a discarding group, release build, this machine).
final class JobLanes: Sendable {
    /// With 32 lanes, 10,000 jobs running are about 300 a group.
    static let count = 32
    private let lanes: [(stream: AsyncStream<DaemonJob>, continuation: AsyncStream<DaemonJob>.Continuation)]
    private let turn = Atomic<UInt>(0)

    init() {
        lanes = (0..<Self.count).map { _ in AsyncStream.makeStream(of: DaemonJob.self) }
    }

    /// Queues `job` in the next lane; false when the lanes have ended (ferryd stopped).
    func hand(_ job: DaemonJob) -> Bool {
        let lane = lanes[Int(turn.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(lanes.count))]
        if case .terminated = lane.continuation.yield(job) { return false }
        return true
    }

    /// Runs each job handed in as a child task of its lane's group, until the caller's task is
    /// cancelled; returns once the jobs already handed in have ended.
    func run(_ perform: @escaping @Sendable (DaemonJob) async -> Void) async {
        await withDiscardingTaskGroup { all in
            for lane in lanes {
                all.addTask {
                    await withDiscardingTaskGroup { group in
                        for await job in lane.stream { group.addTask { await perform(job) } }
                    }
                }
            }
        }
    }
}

extension Daemon {
    /// Hands a job to `run()`; a job that comes after ferryd stopped is not run (a connection
    /// is closed instead).
    nonisolated func schedule(_ job: DaemonJob) {
        if !work.hand(job), case .serve(let connection, _) = job {
            connection.closeBecauseStopping()
        }
    }

    /// Asks ferryd to stop, as a client's `stop` does (a signal handler calls this):
    /// `run()` returns once it has.
    public nonisolated func requestStop() {
        schedule(.stop)
    }

    func perform(_ job: DaemonJob) async {
        switch job {
        case .attempt(let record, let session, let control):
            await control.runs { await self.execute(record, session: session) }
        case .serve(let connection, let requests):
            connected(connection)
            while let batch = await requests.next() {
                await handle(batch: batch, from: connection)
                connection.served(batch.count)
            }
            await disconnected(connection)
        case .idleCheck(let connection):
            closeIfIdle(connection)
        case .launchTimer(let session, let deadline, let control):
            let clock = self.clock
            await control.runs {
                guard (try? await clock.sleep(until: deadline)) != nil else { return }
                await self.launchIfNeeded(session)
            }
        case .routeCheck(let deadline):
            try? await clock.sleep(until: deadline)
            await interruptTransfersThatLostTheirRoute()
        case .discardUpload(let transfer, let session, let task):
            await engine.discardUpload(of: transfer)
            logger.debug("upload resource given up", metadata: ["session": "\(session)", "task": "\(task)"])
        case .progress(let key, let snapshot, let live, let persist):
            if live {
                broadcast(TaskProgress(
                    sessionIdentifier: key.session, taskIdentifier: key.task, bytesSent: snapshot.bytesSent,
                    bytesReceived: snapshot.bytesReceived, bytesExpectedToSend: snapshot.bytesExpectedToSend,
                    bytesExpectedToReceive: snapshot.bytesExpectedToReceive))
            }
            if persist { await persistProgress(key, snapshot) }
        case .trimHeap:
            guard (try? await Task.sleep(for: HeapTrim.interval)) != nil else { return }
            heapTrim.trailingTrim()
        case .stop:
            await shutdown()
            stopHandler?()
        }
    }
}
