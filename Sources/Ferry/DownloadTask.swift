import FerryCore
import FerryEngine
public import Foundation
import NIOConcurrencyHelpers

/// A request whose response body goes to a file. Pause it with
/// ``cancelByProducingResumeData()`` and continue later, even in another process, with
/// ``Session/downloadTask(withResumeData:)``.
///
/// ```swift
/// let task = session.downloadTask(with: url)
/// task.resume()
/// // … later
/// if let resumeData = await task.cancelByProducingResumeData() {
///     let continued = session.downloadTask(withResumeData: resumeData)
///     continued.resume()     // sends Range: bytes=N- with If-Range
/// }
/// ```
public final class DownloadTask: SessionTask, @unchecked Sendable {
    typealias CompletionHandler = @Sendable (URL?, Response?, FerryError?) async -> Void

    /// Where the bytes are written while the task runs.
    let partialFile: URL
    private let completionHandler: CompletionHandler?
    /// The async API takes the file over; otherwise it is deleted after the callbacks.
    private let handsFileToCaller: Bool
    /// A resume-data blob that did not decode: the task fails with this when resumed.
    private let resumeDataError: FerryError?
    /// Where the finished file is (ferryd's place for background downloads).
    private let finishedLocation = NIOLockedValueBox<URL?>(nil)
    /// ferryd's own resume data, passed back to it untouched.
    let backgroundResumeData: Data?

    struct Resume {
        var validator: String?
    }
    private let resumeState: NIOLockedValueBox<Resume>

    init(
        session: Session, identifier: Int, request: Request, partialFile: URL, validator: String?,
        resumeDataError: FerryError? = nil, handsFileToCaller: Bool = false, completionHandler: CompletionHandler? = nil,
        backgroundResumeData: Data? = nil
    ) {
        self.backgroundResumeData = backgroundResumeData
        self.partialFile = partialFile
        self.completionHandler = completionHandler
        self.handsFileToCaller = handsFileToCaller
        self.resumeDataError = resumeDataError
        self.resumeState = NIOLockedValueBox(Resume(validator: validator))
        super.init(session: session, identifier: identifier, request: request)
    }

    override func makeTransfer() throws -> Transfer {
        if let resumeDataError { throw resumeDataError }
        var transfer = session.transfer(for: originalRequest)
        // The file's size matters only when there is something to resume (a fresh download
        // skips the lookup: it is a measurable part of a 16 KiB transfer).
        let validator = resumeState.withLockedValue { $0.validator }
        let resume = validator.flatMap { v in Self.size(of: partialFile).map { ResumePoint(offset: $0, validator: v) } }
        transfer.destination = .file(partialFile, resume: resume)
        return transfer
    }

    override func responseArrived(_ response: Response) {
        resumeState.withLockedValue { $0.validator = TransferEngineValidator.of(response) }
    }

    override func didFinishTransfer(_ result: TransferResult) {
        handOver(partialFile)
    }

    /// The finished file is the delegate's while its callback runs. Queued, not waited for:
    /// the completion queues after it, and the file goes after that.
    func handOver(_ location: URL) {
        finishedLocation.withLockedValue { $0 = location }
        emit(.finishedDownloading(to: location))
        if let delegate = session.delegate {
            let session = self.session
            session.delegateQueue.enqueue {
                await delegate.session(session, downloadTask: self, didFinishDownloadingTo: location)
            }
        }
    }

    override var kind: TaskKind { .download }

    /// Resume data from ferryd to continue from, for a background session's
    /// `downloadTask(withResumeData:)`.
    override var daemonResumeData: Data? { backgroundResumeData }

    override func fileArrived(at location: URL) async {
        handOver(location)
    }

    override var hasCompletionHandler: Bool { completionHandler != nil }

    /// ferryd may have put the file elsewhere than `partialFile`; it said where.
    private var finishedFile: URL { finishedLocation.withLockedValue { $0 } ?? partialFile }

    override func completionCallback(_ error: FerryError?) async {
        await completionHandler?(error == nil ? finishedFile : nil, response, error)
    }

    override func completionCleanup(_ error: FerryError?) {
        // The file is the app's only during the callbacks (unless the async API took it,
        // or it is kept for resume data).
        let keep = (error == nil && handsFileToCaller) || error?.resumeData != nil
        if !keep { unlink(finishedFile.path) }
    }

    override func errorForFailure(_ error: FerryError) -> FerryError {
        var error = error
        let validator = resumeState.withLockedValue { $0.validator }
        let size = Self.size(of: partialFile) ?? 0
        let wantsResumeData = error.code != .cancelled || lock.withLockedValue { $0.lifecycle.cancelProducesResumeData }
        if wantsResumeData, let validator, size > 0, error.code != .integrityCheckFailed {
            error.resumeData = DownloadResumeData(request: originalRequest, partialFile: partialFile, bytesReceived: size, validator: validator).encoded()
        }
        return error
    }

    static func size(of file: URL) -> Int64? {
        var info = stat()
        return stat(file.path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// Cancels the download and returns what ``Session/downloadTask(withResumeData:)`` needs
    /// to continue it, or nil when it cannot continue (nothing received yet, or the server
    /// gave no validator: then it would have to start over anyway).
    public func cancelByProducingResumeData() async -> Data? {
        cancel(producingResumeData: true)
        await waitUntilCompleted()
        return error?.resumeData
    }
}

/// Same rule as the engine: a strong ETag, else Last-Modified.
enum TransferEngineValidator {
    static func of(_ response: Response) -> String? {
        guard response.statusCode == 200 || response.statusCode == 206 else { return nil }
        if let etag = response.etag, !etag.hasPrefix("W/") { return etag }
        return response.lastModified
    }
}
