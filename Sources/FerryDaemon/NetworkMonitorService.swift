import FerryNetwork
import Foundation
import ServiceLifecycle

/// Follows the network namespace's links and routes (and the power supply) and hands each
/// reading that differs from the last to the daemon (`Daemon.networkChanged(_:)`).
struct NetworkMonitorService: Service {
    let daemon: Daemon

    func run() async {
        // The newest reading only: a scheduler that is behind needs the present, not the past.
        let (readings, continuation) = AsyncStream.makeStream(of: NetworkConditions.self, bufferingPolicy: .bufferingNewest(1))
        let watch = NetworkWatch(
            monitoring: daemon.configuration.networkMonitoring, classes: daemon.configuration.networkInterfaceClasses,
            networkManagerBus: daemon.configuration.networkManagerBusAddress,
            powerSupply: daemon.configuration.powerSupplyDirectory, logger: daemon.logger, threadName: "ferryd network monitor"
        ) { continuation.yield($0) }
        if daemon.configuration.networkMonitoring == .off { daemon.networkRead.signal() }  // no reading will come
        await cancelWhenGracefulShutdown {
            await withTaskCancellationHandler {
                // With the monitor off the stream stays open until the service is cancelled: a
                // service that ends would stop ferryd.
                for await conditions in readings { await daemon.networkChanged(conditions) }
            } onCancel: {
                watch.stop()
                continuation.finish()
            }
        }
    }
}
