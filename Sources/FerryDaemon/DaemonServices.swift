import FerryCore
public import ServiceLifecycle

// ferryd's parts as services of one ServiceGroup. The listener ends when ferryd has stopped
// (a `stop` request, SIGTERM through the group, the socket gone); `ferryd` gives it the
// `.gracefullyShutdownGroup` behaviour, so its end shuts the others down, in reverse start
// order: the scheduler, delivery, and last the work, which the stop itself ran on.

extension Daemon {
    /// The daemon's services, in start order (a group stops them in reverse): the work
    /// (attempts, connections, launch timers, progress), event delivery (the pump and the
    /// launcher), the network monitor, and the scheduler. Add ``ListenerService`` for the socket.
    ///
    /// ```swift
    /// let services = daemon.services() + [ListenerService(daemon: daemon, server: server)]
    /// let group = ServiceGroup(configuration: .init(
    ///     services: services.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup) },
    ///     gracefulShutdownSignals: [.sigterm], logger: logger))
    /// try await group.run()
    /// ```
    public nonisolated func services() -> [any Service] {
        [
            DaemonWorkService(daemon: self), EventDeliveryService(daemon: self), NetworkMonitorService(daemon: self),
            SchedulerService(daemon: self),
        ]
    }

    /// Runs the daemon's services (not a listener) until it stops: for tests and embedders
    /// without a service group. `onStop` is called when a client asked ferryd to stop.
    public func run(onStop: @escaping @Sendable () -> Void = {}) async throws {
        stopHandler = onStop
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in services() { group.addTask { try await service.run() } }
            await stopped()
            group.cancelAll()  // what a group's graceful shutdown does to each service
            try await group.waitForAll()
        }
    }
}

/// Every job ferryd runs beside a request (`DaemonJob`), as child tasks in `JobLanes`, until
/// ferryd stops and the jobs already handed in have ended.
struct DaemonWorkService: Service {
    let daemon: Daemon

    func run() async {
        // Shut down last: the stop itself (interrupting attempts, saying goodbye) ran here.
        await cancelWhenGracefulShutdown { await daemon.runJobs() }
    }
}

/// The event pump and the launcher: for each session whose events were stored, pushes them
/// to its owner or launches its app (`Daemon.eventsStored(in:)`, one at a time per session).
/// Starts with the sessions a previous run left with undelivered events.
struct EventDeliveryService: Service {
    let daemon: Daemon

    func run() async {
        await cancelWhenGracefulShutdown { await daemon.runDeliveries() }
    }
}

/// Starts runnable tasks within the limits, then sleeps until the next begin date or retry
/// time or a wake-up. First requeues the tasks a previous run left `running`.
struct SchedulerService: Service {
    let daemon: Daemon

    func run() async throws {
        try await daemon.requeueInterruptedTasks()
        await cancelWhenGracefulShutdown {
            await daemon.firstNetworkReading(within: .seconds(2))
            await daemon.schedulerLoop()
        }
    }
}

/// The socket: serves until ferryd stops (then closes it) or the socket closes (then stops
/// ferryd).
public struct ListenerService: Service {
    let daemon: Daemon
    let server: DaemonServer

    public init(daemon: Daemon, server: DaemonServer) {
        self.daemon = daemon
        self.server = server
    }

    public func run() async {
        let (daemon, server) = (self.daemon, self.server)
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    try? await server.closeFuture()
                    daemon.requestStop()
                }
                await daemon.stopped()
                await server.close()  // ends the watcher above
            }
        } onGracefulShutdown: {
            daemon.requestStop()
        }
    }
}
