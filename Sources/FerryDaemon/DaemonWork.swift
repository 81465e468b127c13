import FerryCore
import FerryEngine
import FerryProtocol
import FerryStore
import Foundation

/// Work ferryd does beside answering one request. Each job runs as a child of
/// `Daemon.run()`'s task group, so nothing outlives the daemon and stopping waits for all of
/// it: no unstructured tasks.
enum DaemonJob: Sendable {
    /// One attempt of a stored task; `control` stops it early (suspend, cancel, shutdown).
    case attempt(TaskRecord, StopControl)
    /// One client connection's requests, in order, until it closes.
    case serve(ClientConnection, RequestQueue)
    /// A connection sent nothing for the idle time-out: closed unless it holds a session.
    case idleCheck(ClientConnection)
    /// A launched app that has not taken its events: look again at `deadline`, unless stopped.
    case launchTimer(session: String, deadline: Date, StopControl)
    /// A cancelled upload's resource, given up on the server (bounded; the reply did not wait).
    case discardUpload(Transfer, session: String, task: Int)
    /// A transfer's progress: live to the session's clients, and/or saved as its resume point.
    case progress(TaskKey, TaskReporter.Snapshot, live: Bool, persist: Bool)
    /// Freed heap goes back to the system a second after a burst of clients left (`HeapTrim`).
    case trimHeap
    /// A client asked ferryd to stop.
    case stop
}

extension Daemon {
    /// Hands a job to `run()`; a job that comes after ferryd stopped is not run (a connection
    /// is closed instead).
    nonisolated func schedule(_ job: DaemonJob) {
        if case .terminated = work.yield(job), case .serve(let connection, _) = job {
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
        case .attempt(let record, let control):
            await control.runs { await self.execute(record) }
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
