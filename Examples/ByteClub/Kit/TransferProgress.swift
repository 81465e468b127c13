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

/// Told each time a transfer moves on.
typealias ProgressWatcher = @Sendable (TransferProgress) -> Void

/// An upload's own delegate (`upload(for:fromFile:delegate:)`): passes `didSendBodyData` to
/// the progress bar, as the tutorial's view controller did.
final class UploadProgress: NSObject, Sendable {
    private let watcher: ProgressWatcher

    init(_ watcher: @escaping ProgressWatcher) {
        self.watcher = watcher
    }
}

extension UploadProgress: URLSessionTaskDelegate {
    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64) {
        watcher(TransferProgress(bytes: totalBytesSent, expected: totalBytesExpectedToSend))
    }
}

/// The session's delegate, for the photo downloads (the tutorial's download delegate): passes
/// each download's progress to whoever watches it, hands its file over before the session
/// deletes it, and tells how it ended. Tasks nobody watches (thumbnails) are left alone.
final class DownloadRelay: NSObject, Sendable {
    /// Takes a finished download's file before the session deletes it.
    typealias Arrival = @Sendable (URL) -> Void
    private struct Watching {
        var watcher: ProgressWatcher?
        var arrival: Arrival
        var ending: Ending
        var resumedAt: Int64 = 0
    }
    private let watching = NIOLockedValueBox<[URLSessionTask: Watching]>([:])

    /// Watches `task` until it completes; `ending` gets its error (nil: it succeeded).
    func watch(_ task: URLSessionDownloadTask, progress: ProgressWatcher?, arrival: @escaping Arrival, ending: Ending) {
        watching.withLockedValue { $0[task] = Watching(watcher: progress, arrival: arrival, ending: ending) }
    }

    private func report(_ task: URLSessionTask, bytes: Int64, expected: Int64) {
        guard let watched = watching.withLockedValue({ $0[task] }) else { return }
        watched.watcher?(TransferProgress(bytes: bytes, expected: expected, resumedAt: watched.resumedAt))
    }
}

extension DownloadRelay: URLSessionDownloadDelegate {
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
                    totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        report(downloadTask, bytes: totalBytesWritten, expected: totalBytesExpectedToWrite)
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64,
                    expectedTotalBytes: Int64) {
        watching.withLockedValue { $0[downloadTask]?.resumedAt = fileOffset }
        report(downloadTask, bytes: fileOffset, expected: expectedTotalBytes)
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        watching.withLockedValue { $0[downloadTask]?.arrival }?(location)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        watching.withLockedValue { $0.removeValue(forKey: task) }?.ending.set(error)
    }
}

/// How a task ended, set once by the delegate and awaited by whoever started it (in either order).
final class Ending: Sendable {
    private struct State {
        var ended = false
        var error: (any Error)?
        var waiter: CheckedContinuation<(any Error)?, Never>?
    }
    private let state = NIOLockedValueBox(State())

    func set(_ error: (any Error)?) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<(any Error)?, Never>? in
            guard !state.ended else { return nil }
            state.ended = true
            state.error = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: error)
    }

    /// The task's error once it has ended (nil: it succeeded). One caller waits.
    func wait() async -> (any Error)? {
        await withCheckedContinuation { continuation in
            let ended = state.withLockedValue { state -> (any Error)?? in
                if state.ended { return .some(state.error) }
                state.waiter = continuation
                return nil
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }
}
