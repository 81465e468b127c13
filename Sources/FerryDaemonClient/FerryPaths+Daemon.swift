public import FerryApps
public import Foundation

extension FerryPaths {
    /// Files of a session without an app group (an upload body made from `Data`, a download
    /// ferryd writes): `<data>/session-files/<session>`, where ferryd looks for them too.
    public func sessionFiles(_ session: String) -> URL {
        var name = String(session.map { $0 == "/" || $0 == "\0" ? "_" : $0 })
        while name.hasPrefix(".") { name = "_" + name.dropFirst() }
        return dataDirectory.appendingPathComponent("session-files/\(name.isEmpty ? "_" : String(name.prefix(200)))", isDirectory: true)
    }

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
