import Ferry
import FerryTestSupport
import Foundation
import Synchronization
import Testing

func makeTemporaryDirectory() throws -> URL { try TestFiles.makeTemporaryDirectory() }
func sha256Hex(ofFile url: URL) throws -> String { try TestFiles.sha256Hex(ofFile: url) }
func sha256Hex(_ data: Data) -> String { TestFiles.sha256Hex(data) }

func withServer<T>(_ body: (TestHTTPServer) async throws -> T) async throws -> T {
    let server = try await TestHTTPServer.start()
    do {
        let value = try await body(server)
        try await server.shutdown()
        return value
    } catch {
        try? await server.shutdown()
        throw error
    }
}

extension TestHTTPServer {
    func url(_ path: String) -> URL { URL(string: baseURL + path)! }
}

/// A delegate that writes down every callback, in the order the session made them.
final class RecordingDelegate: SessionDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var _log: [String] = []
    private var _written: [(Int64, Int64, Int64)] = []
    private var _sent: [(Int64, Int64, Int64)] = []
    private var _data = Data()
    private var _finishedFileExisted: Bool?
    private var _completions = 0
    private var _inCallback = false
    private var _overlapped = false
    var moveDownloadTo: URL?
    /// Copies the finished download here during the callback (the file itself is then deleted).
    var keepCopyOfDownloadAt: URL?
    private var _finishedLocation: URL?
    var finishedLocation: URL? { lock.withLock { _finishedLocation } }
    var cancelOnResponse = false
    let completed = AsyncStream<FerryError?>.makeStream()

    var log: [String] { lock.withLock { _log } }
    var written: [(Int64, Int64, Int64)] { lock.withLock { _written } }
    var sent: [(Int64, Int64, Int64)] { lock.withLock { _sent } }
    var data: Data { lock.withLock { _data } }
    var finishedFileExisted: Bool? { lock.withLock { _finishedFileExisted } }
    var overlapped: Bool { lock.withLock { _overlapped } }

    private func enter(_ entry: String) {
        lock.withLock {
            if _inCallback { _overlapped = true }
            _inCallback = true
            _log.append(entry)
        }
    }
    private func leave() { lock.withLock { _inCallback = false } }

    func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition {
        enter("response \(response.statusCode)")
        try? await Task.sleep(for: .milliseconds(5))  // a slow delegate must not be overtaken
        leave()
        return cancelOnResponse ? .cancel : .allow
    }
    func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {
        enter("data")
        lock.withLock { _data.append(data) }
        leave()
    }
    func session(_ session: Session, task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) async {
        enter("sent")
        lock.withLock { _sent.append((bytesSent, totalBytesSent, totalBytesExpectedToSend)) }
        leave()
    }
    func session(_ session: Session, downloadTask: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) async {
        enter("written")
        lock.withLock { _written.append((bytesWritten, totalBytesWritten, totalBytesExpectedToWrite)) }
        leave()
    }
    func session(_ session: Session, downloadTask: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) async {
        enter("resumed \(fileOffset)")
        leave()
    }
    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        enter("finished")
        lock.withLock {
            _finishedFileExisted = FileManager.default.fileExists(atPath: location.path)
            _finishedLocation = location
        }
        if let keepCopyOfDownloadAt { try? FileManager.default.copyItem(at: location, to: keepCopyOfDownloadAt) }
        if let moveDownloadTo { try? FileManager.default.moveItem(at: location, to: moveDownloadTo) }
        leave()
    }
    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        enter("complete \(error.map { "\($0.code)" } ?? "ok")")
        leave()
        completed.continuation.yield(error)
    }

    func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask) async {
        enter("waiting for connectivity \(task.taskIdentifier)")
        leave()
    }

    /// Waits for the next completion (bounded by the test's own time limit).
    func nextCompletion() async -> FerryError?? {
        for await error in completed.stream { return .some(error) }
        return nil
    }
}

/// Resumes and cancels each task from two threads at the same moment: the threads meet at each
/// task (each spins until the other is there), then one resumes it while the other cancels it.
/// Returns at once; wait for the tasks to complete.
func resumeAndCancelAtOnce(_ tasks: [SessionTask]) {
    final class Meeting: Sendable {
        let resumer = Atomic<Int>(0)
        let canceller = Atomic<Int>(0)
    }
    let arrived = Meeting()
    let resumer = Thread {
        for (index, task) in tasks.enumerated() {
            arrived.resumer.store(index + 1, ordering: .sequentiallyConsistent)
            while arrived.canceller.load(ordering: .sequentiallyConsistent) < index + 1 {}
            task.resume()
        }
    }
    let canceller = Thread {
        for (index, task) in tasks.enumerated() {
            arrived.canceller.store(index + 1, ordering: .sequentiallyConsistent)
            while arrived.resumer.load(ordering: .sequentiallyConsistent) < index + 1 {}
            task.cancel()
        }
    }
    resumer.start()
    canceller.start()
}
