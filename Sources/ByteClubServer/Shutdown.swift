import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The server's open TCP connections, so that a shutdown can close those still busy when its
/// grace period ends (a slow upload, a client that never finishes its request).
final class OpenConnections: Sendable {
    private let open = Mutex<[ObjectIdentifier: any Channel]>([:])

    /// Keeps `channel` until it closes.
    func add(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        open.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.open.withLock { $0.removeValue(forKey: key) }
        }
    }

    var count: Int { open.withLock { $0.count } }

    /// Closes every open connection; returns how many there were.
    @discardableResult
    func closeAll() -> Int {
        let channels = open.withLock { Array($0.values) }
        for channel in channels { channel.close(promise: nil) }
        return channels.count
    }
}

/// Runs the server with a bounded graceful shutdown: when swift-service-lifecycle asks for one
/// (SIGTERM, SIGINT), Hummingbird stops accepting and lets running requests finish; after
/// `grace` the connections still open are closed and the server's task cancelled (an unfinished
/// upload is discarded, never stored in part), and after `grace + hardStop` `run()` returns even
/// if something still holds on, so the process always exits.
struct BoundedShutdownService<Inner: Service>: Service {
    let inner: Inner
    let grace: Duration
    let hardStop: Duration
    let connections: OpenConnections
    let logger: Logger
    /// Called when the graceful shutdown starts (long-polls answer at once instead of holding it up).
    var onShutdown: @Sendable () -> Void = {}

    /// Thrown by `run()` when the server had not stopped `hardStop` after its connections were closed.
    struct StuckAfterGrace: Error, CustomStringConvertible {
        var description: String { "the server did not stop after its connections were closed" }
    }

    func run() async throws {
        let (ended, continuation) = AsyncStream.makeStream(of: Result<Void, any Error>.self)
        // Unstructured tasks inherit the task-local graceful-shutdown manager, and unlike child
        // tasks they do not make this function wait for them.
        let server = Task {
            do {
                try await inner.run()
                continuation.yield(.success(()))
            } catch {
                continuation.yield(.failure(error))
            }
        }
        let watchdog = Task { [grace, hardStop, connections, logger, onShutdown] in
            do { try await gracefulShutdown() } catch { return }
            onShutdown()
            logger.notice("shutting down: no new connections; running requests have \(grace) to finish",
                          metadata: ["connections": "\(connections.count)"])
            do { try await Task.sleep(for: grace) } catch { return }
            let closed = connections.closeAll()
            logger.warning("grace period over: closed the connections still open", metadata: ["connections": "\(closed)"])
            server.cancel()
            do { try await Task.sleep(for: hardStop) } catch { return }
            continuation.yield(.failure(StuckAfterGrace()))
        }
        defer { watchdog.cancel() }
        var result: Result<Void, any Error> = .success(())
        await withTaskCancellationHandler {
            for await first in ended {
                result = first
                break
            }
        } onCancel: {
            server.cancel()
        }
        try result.get()
    }
}
