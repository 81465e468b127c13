import FerryApps
import FerryDaemonClient
import FerryEngine
import Foundation

/// Where a background session's files live and where ferryd listens (`FerryPaths`).
///
/// An upload made from `Data` is written to a file ferryd reads after this process has gone:
/// into the app group's shared container when the session names a group, else into a
/// folder of the session's own. Downloads are placed by ferryd inside the session's container
/// and handed over with their location.
struct BackgroundPlaces: Sendable {
    let endpoint: DaemonEndpoint
    /// Where the session's own files go.
    let container: URL
    /// Set when the places cannot be used (a runtime folder of another user…).
    let problem: FerryError?

    static func resolve(session: String, group: String?, environment: [String: String]?) -> BackgroundPlaces {
        do {
            let paths = try FerryPaths(environment: environment ?? ProcessInfo.processInfo.environment)
            try paths.prepare()
            let container = group.map { paths.containerURL(forGroup: $0) } ?? paths.sessionFiles(session)
            var endpoint = paths.endpoint(environment: environment)
            endpoint.handlesEventsForOtherSessions = BackgroundLaunch.handlesEventsWhileRunning
            endpoint.answersChallenges = true  // the session's delegate, or the default
            return BackgroundPlaces(endpoint: endpoint, container: container, problem: nil)
        } catch {
            let problem = FerryError(.backgroundSessionWasDisconnected, "cannot use Ferry's folders: \(error)", underlying: error)
            let nowhere = DaemonEndpoint(socketPath: "/nonexistent", daemonLogPath: "/dev/null", startsDaemon: false)
            return BackgroundPlaces(endpoint: nowhere, container: FileManager.default.temporaryDirectory, problem: problem)
        }
    }

    /// Ferry's own files inside the container, apart from the app's.
    var ferryDirectory: URL { container.appendingPathComponent(".ferry", isDirectory: true) }

    /// Where an upload made from `Data` keeps its body until the task ends (ferryd deletes it then).
    func uploadBodyFile(session: String, task: Int) -> URL {
        FerryPaths.spooledUploadBody(in: container, session: session, task: task)
    }

    /// Where a download is said to be before ferryd reports its real place (never written by us).
    func provisionalDownloadFile(session: String, task: Int) -> URL {
        ferryDirectory.appendingPathComponent("downloads/\(session.replacingOccurrences(of: "/", with: "_"))-\(task).download")
    }

    /// Creates the folder of `file` (0700, like the container).
    func prepareFolder(of file: URL) throws {
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
}
