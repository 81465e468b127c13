public import FerryApps
import Foundation

extension FerryPaths {
    /// ferryd's endpoint for these folders. A ferryd started through it gets `environment`
    /// (so it serves the same folders) and is `$FERRYD_PATH` from it when set.
    ///
    /// ```swift
    /// let connection = try await DaemonConnection.open(try FerryPaths().endpoint(), clientName: "my-tool")
    /// ```
    public func endpoint(environment: [String: String]? = nil, startsDaemon: Bool = true) -> DaemonEndpoint {
        var endpoint = DaemonEndpoint(
            socketPath: socketURL.path,
            daemonLogPath: logsDirectory.appendingPathComponent("ferryd.log").path,
            startsDaemon: startsDaemon,
            daemonExecutable: environment?["FERRYD_PATH"])
        endpoint.daemonEnvironment = environment ?? [:]
        return endpoint
    }
}
