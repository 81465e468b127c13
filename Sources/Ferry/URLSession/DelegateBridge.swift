import FerryEngine
import Foundation
import NIOConcurrencyHelpers

/// Ferry's delegate calls, passed on to a ``URLSession``'s delegate (or a task's own) in
/// URLSession's names and types, on the session's `delegateQueue`. Each call returns when the
/// URLSession delegate's method has returned (or called its completion handler), so the order
/// and the "move the file before returning" rule hold.
final class DelegateBridge: SessionDelegate {
    /// The URLSession, held until the session is invalidated. Calls wait for it: a background
    /// session starts delivering ferryd's stored events while `URLSession.init` is still running.
    let owner = OwnerGate()
    /// Whether the URLSession's delegate judges server trust: assumed until its answer comes
    /// from the protocol's default (the method is not implemented), then no host is probed.
    private let judgesServerTrust = NIOLockedValueBox(true)

    var evaluatesServerTrust: Bool { judgesServerTrust.withLockedValue { $0 } }

    /// The session, the view of `task`, and the delegate to call: the task's own if it has
    /// one of the kind `P`, else the session's.
    private func target<P: Sendable>(_ task: SessionTask, _ kind: P.Type) async -> (URLSession, URLSessionTask, P)? {
        guard let urlSession = await owner.current() else { return nil }
        let view = urlSession.view(task)
        guard let delegate = (view.delegate as? P) ?? (urlSession.delegate as? P) else { return nil }
        return (urlSession, view, delegate)
    }

    private func call<P: Sendable>(_ task: SessionTask, _ kind: P.Type, _ work: @escaping @Sendable (URLSession, URLSessionTask, P) -> Void) async {
        guard let (urlSession, view, delegate) = await target(task, kind) else { return }
        await URLSession.run(on: urlSession.delegateQueue) { work(urlSession, view, delegate) }
    }

    /// A call whose answer comes through a completion handler.
    private func ask<P: Sendable, Answer: Sendable>(
        _ task: SessionTask, _ kind: P.Type, otherwise: Answer,
        _ work: @escaping @Sendable (URLSession, URLSessionTask, P, @escaping @Sendable (Answer) -> Void) -> Void
    ) async -> Answer {
        guard let (urlSession, view, delegate) = await target(task, kind) else { return otherwise }
        return await Self.answer(on: urlSession.delegateQueue) { answer in work(urlSession, view, delegate, answer) }
    }

    /// Runs `work` on `queue` and waits for the answer it gives its completion handler.
    private static func answer<Answer: Sendable>(
        on queue: OperationQueue, _ work: @escaping @Sendable (@escaping @Sendable (Answer) -> Void) -> Void
    ) async -> Answer {
        await withCheckedContinuation { continuation in
            let answered = NIOLockedValueBox(false)
            queue.addOperation {
                work { answer in
                    // A completion handler called twice is the app's bug; the first answer counts.
                    guard !answered.withLockedValue({ done in defer { done = true }; return done }) else { return }
                    continuation.resume(returning: answer)
                }
            }
        }
    }

    func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition {
        // As on the platform: a task with a completion handler (the async methods' too) gets
        // its response and body there, not through the data delegate.
        guard dataTask.completionHandler == nil else { return .allow }
        let disposition = await ask(dataTask, (any URLSessionDataDelegate).self, otherwise: URLSession.ResponseDisposition.allow) { s, view, d, answer in
            d.urlSession(s, dataTask: view as! URLSessionDataTask, didReceive: HTTPURLResponse(response), completionHandler: answer)
        }
        // becomeDownload and becomeStream are not supported: the task goes on as a data task.
        return disposition == .cancel ? .cancel : .allow
    }

    func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {
        guard dataTask.completionHandler == nil else { return }
        await call(dataTask, (any URLSessionDataDelegate).self) { s, view, d in d.urlSession(s, dataTask: view as! URLSessionDataTask, didReceive: data) }
    }

    func session(_ session: Session, task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) async {
        await call(task, (any URLSessionTaskDelegate).self) { s, view, d in
            d.urlSession(s, task: view, didSendBodyData: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
        }
    }

    func session(_ session: Session, downloadTask: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) async {
        await call(downloadTask, (any URLSessionDownloadDelegate).self) { s, view, d in
            d.urlSession(s, downloadTask: view as! URLSessionDownloadTask, didWriteData: bytesWritten, totalBytesWritten: totalBytesWritten,
                         totalBytesExpectedToWrite: totalBytesExpectedToWrite)
        }
    }

    func session(_ session: Session, downloadTask: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) async {
        await call(downloadTask, (any URLSessionDownloadDelegate).self) { s, view, d in
            d.urlSession(s, downloadTask: view as! URLSessionDownloadTask, didResumeAtOffset: fileOffset, expectedTotalBytes: expectedTotalBytes)
        }
    }

    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        await call(downloadTask, (any URLSessionDownloadDelegate).self) { s, view, d in
            d.urlSession(s, downloadTask: view as! URLSessionDownloadTask, didFinishDownloadingTo: location)
        }
    }

    func session(_ session: Session, task: SessionTask, willPerformHTTPRedirection response: Response, newRequest request: Request) async -> Request? {
        let answer = await ask(task, (any URLSessionTaskDelegate).self, otherwise: Optional(URLRequest(request))) { s, view, d, answer in
            d.urlSession(s, task: view, willPerformHTTPRedirection: HTTPURLResponse(response), newRequest: URLRequest(request), completionHandler: answer)
        }
        return answer?.request
    }

    func session(_ session: Session, task: SessionTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeAnswer {
        let answer = await ask(task, (any URLSessionTaskDelegate).self, otherwise: ChallengeAnswer.performDefaultHandling) { s, view, d, answer in
            d.urlSession(s, task: view, didReceive: URLAuthenticationChallenge(challenge)) { disposition, credential in
                answer(ChallengeAnswer(disposition, credential))
            }
        }
        return answer
    }

    func session(_ session: Session, didReceive challenge: ConnectionChallenge) async -> ConnectionChallengeAnswer {
        await self.session(session, didReceive: challenge, task: nil)
    }

    /// The session delegate's `urlSession(_:didReceive:completionHandler:)`; when its class does
    /// not implement it, the task's `urlSession(_:task:didReceive:completionHandler:)` (server
    /// trust only: a client certificate is asked for by a connection, not a task). When neither
    /// is implemented, no host is probed again.
    func session(_ session: Session, didReceive challenge: ConnectionChallenge, task: SessionTask?) async -> ConnectionChallengeAnswer {
        guard let urlSession = await owner.current(), let delegate = urlSession.delegate else { return .performDefaultHandling }
        let method = challenge.protectionSpace.method
        let asked = URLAuthenticationChallenge(challenge)
        let answer = await Self.answer(on: urlSession.delegateQueue) { answer in
            delegate.urlSession(urlSession, didReceive: asked) { disposition, credential in
                answer(ConnectionChallengeAnswer(disposition, credential, challenge: challenge))
            }
        }
        guard method == .serverTrust, asked.answeredByDefault.withLock({ $0 }) else { return answer }
        if let task {
            let askedTask = URLAuthenticationChallenge(challenge)
            let taskAnswer = await ask(task, (any URLSessionTaskDelegate).self, otherwise: ConnectionChallengeAnswer.performDefaultHandling) { s, view, d, answer in
                d.urlSession(s, task: view, didReceive: askedTask) { disposition, credential in
                    answer(ConnectionChallengeAnswer(disposition, credential, challenge: challenge))
                }
            }
            if !askedTask.answeredByDefault.withLock({ $0 }) { return taskAnswer }
            // A task's own delegate that does not answer says nothing of the session's.
            if urlSession.view(task).delegate != nil { return answer }
        }
        judgesServerTrust.withLockedValue { $0 = false }
        return answer
    }

    func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {
        await call(task, (any URLSessionTaskDelegate).self) { s, view, d in d.urlSession(s, task: view, didFinishCollecting: URLSessionTaskMetrics(metrics)) }
    }

    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        await call(task, (any URLSessionTaskDelegate).self) { s, view, d in d.urlSession(s, task: view, didCompleteWithError: error.map(URLError.init)) }
        await owner.current()?.forget(task)
    }

    func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask) async {
        await call(task, (any URLSessionTaskDelegate).self) { s, view, d in d.urlSession(s, taskIsWaitingForConnectivity: view) }
    }

    func session(_ session: Session, didBecomeInvalidWithError error: FerryError?) async {
        guard let urlSession = await owner.current() else { return }
        if let delegate = urlSession.delegate {
                await URLSession.run(on: urlSession.delegateQueue) { delegate.urlSession(urlSession, didBecomeInvalidWithError: error.map(URLError.init)) }
        }
        owner.release()
    }

    func sessionDidFinishEvents(forBackgroundSession session: Session) async {
        guard let urlSession = await owner.current(), let delegate = urlSession.delegate else { return }
        await URLSession.run(on: urlSession.delegateQueue) { delegate.urlSessionDidFinishEvents(forBackgroundURLSession: urlSession) }
    }
}

/// The URLSession a bridge serves: set once after `URLSession.init` made its `Session`,
/// released at invalidation. `current()` waits while it is not set yet.
final class OwnerGate: Sendable {
    private struct State {
        var owner: URLSession?
        var released = false
        var waiters: [CheckedContinuation<URLSession?, Never>] = []
    }
    private let state = NIOLockedValueBox(State())

    func set(_ owner: URLSession) { settle(owner: owner, released: false) }

    func release() { settle(owner: nil, released: true) }

    /// Records the owner (or its release) and answers everyone waiting for it.
    private func settle(owner: URLSession?, released: Bool) {
        let waiters = state.withLockedValue { state in
            state.owner = owner
            state.released = released
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: owner) }
    }

    func current() async -> URLSession? {
        await withCheckedContinuation { continuation in
            // nil: not settled yet, so the continuation waits; .some(x): the answer now.
            let ready = state.withLockedValue { state -> URLSession?? in
                if state.released { return .some(nil) }
                if let owner = state.owner { return .some(owner) }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
