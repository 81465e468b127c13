import Ferry
import Foundation
import NIOConcurrencyHelpers

/// How far a transfer is: what the progress bar shows.
public struct TransferProgress: Sendable, Equatable {
    public var bytes: Int64
    /// -1 when the size is not known.
    public var expected: Int64
    /// Where a resumed download started (it did not fetch these bytes again).
    public var resumedAt: Int64 = 0

    public init(bytes: Int64, expected: Int64, resumedAt: Int64 = 0) {
        self.bytes = bytes
        self.expected = expected
        self.resumedAt = resumedAt
    }
}

/// The session's delegate: passes each task's progress to whoever watches that task (the
/// tutorial's view controller implemented `didSendBodyData` the same way).
final class ProgressRelay: SessionDelegate {
    typealias Watcher = @Sendable (TransferProgress) -> Void
    /// Takes a finished download's file before the session deletes it.
    typealias Arrival = @Sendable (URL) -> Void
    private struct Watching {
        var watcher: Watcher?
        var arrival: Arrival?
        var resumedAt: Int64 = 0
    }
    private let watchers = NIOLockedValueBox<[Int: Watching]>([:])

    func watch(_ task: SessionTask, with watcher: Watcher?, arrival: Arrival? = nil) {
        watchers.withLockedValue { $0[task.taskIdentifier] = Watching(watcher: watcher, arrival: arrival) }
    }

    func stopWatching(_ task: SessionTask) {
        _ = watchers.withLockedValue { $0.removeValue(forKey: task.taskIdentifier) }
    }

    private func report(_ task: SessionTask, bytes: Int64, expected: Int64) {
        guard let watching = watchers.withLockedValue({ $0[task.taskIdentifier] }) else { return }
        watching.watcher?(TransferProgress(bytes: bytes, expected: expected, resumedAt: watching.resumedAt))
    }

    func session(_ session: Session, task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) async {
        report(task, bytes: totalBytesSent, expected: totalBytesExpectedToSend)
    }

    func session(_ session: Session, downloadTask: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) async {
        report(downloadTask, bytes: totalBytesWritten, expected: totalBytesExpectedToWrite)
    }

    func session(_ session: Session, downloadTask: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) async {
        watchers.withLockedValue { $0[downloadTask.taskIdentifier]?.resumedAt = fileOffset }
        report(downloadTask, bytes: fileOffset, expected: expectedTotalBytes)
    }

    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        watchers.withLockedValue { $0[downloadTask.taskIdentifier]?.arrival }?(location)
    }
}
