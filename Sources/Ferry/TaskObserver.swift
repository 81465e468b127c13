import FerryEngine
import FerryProtocol
import Foundation

/// Turns the engine's reports for one task into counters, events and delegate calls
/// (through the session's serial queue, so they arrive in order).
struct TaskObserver: TransferObserver {
    let task: SessionTask
    var session: Session { task.session }

    func transferDidReceive(response: Response) async -> Bool {
        record(response)
        guard let dataTask = task as? DataTask, let delegate = session.delegate else { return true }
        let session = self.session
        let disposition = await session.delegateQueue.ask {
            await delegate.session(session, dataTask: dataTask, didReceive: response)
        }
        return disposition == .allow
    }

    /// Only a data task's delegate decides on a response (URLSession asks no other task's).
    func transferDidReceiveAtOnce(response: Response) -> Bool? {
        if task is DataTask, session.delegate != nil { return nil }
        record(response)
        return true
    }

    private func record(_ response: Response) {
        task.lock.withLockedValue {
            $0.response = response
            // A coded body arrives decoded: its Content-Length is not the bytes that will arrive.
            $0.countOfBytesExpectedToReceive = response.isContentCoded ? -1 : response.expectedContentLength
        }
        task.responseArrived(response)
        task.emit(.response(response))
    }

    /// The task waits for the network (`waitsForConnectivity`), in this process or in ferryd:
    /// its `waitingReason` says why, and the delegate hears it (once per task: both callers
    /// call it once).
    func transferIsWaitingForConnectivity(_ reason: WaitingReason) async {
        task.noteWaiting(reason)
        guard let delegate = session.delegate else { return }
        let (session, task) = (self.session, self.task)
        await session.delegateQueue.ask { await delegate.session(session, taskIsWaitingForConnectivity: task) }
    }

    func transferWillRedirect(response: Response, to request: Request) async -> Request? {
        let task = self.task
        let session = self.session
        let next: Request?
        if let delegate = session.delegate {
            next = await session.delegateQueue.ask {
                await delegate.session(session, task: task, willPerformHTTPRedirection: response, newRequest: request)
            }
        } else {
            next = request
        }
        if let next {
            task.lock.withLockedValue { $0.currentRequest = next }
            task.emit(.redirected(to: next))
        }
        return next
    }

    func transferDidReceive(challenge: AuthenticationChallenge) async -> ChallengeAnswer {
        guard let delegate = session.delegate else { return .performDefaultHandling }
        let task = self.task
        let session = self.session
        return await session.delegateQueue.ask { await delegate.session(session, task: task, didReceive: challenge) }
    }

    func transferDidFinish(transaction: TransactionMetrics) {
        task.lock.withLockedValue { $0.transactions.append(transaction) }
    }

    func transferDidReceive(data: Data) async {
        task.lock.withLockedValue { $0.countOfBytesReceived += Int64(data.count) }
        await task.dataArrived(data)
        task.emit(.receivedData(data))
        guard let dataTask = task as? DataTask, let delegate = session.delegate else { return }
        let session = self.session
        await session.delegateQueue.ask { await delegate.session(session, dataTask: dataTask, didReceive: data) }
    }

    func transferDidCreateUploadResource(_ point: ResumableUploadPoint) {
        task.lock.withLockedValue { $0.uploadPoint = point }
    }

    func transferDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        task.lock.withLockedValue {
            $0.countOfBytesSent = totalBytesSent
            $0.countOfBytesExpectedToSend = totalBytesExpectedToSend
        }
        task.emit(.sentBodyData(bytes: bytes, total: totalBytesSent, expected: totalBytesExpectedToSend))
        guard let delegate = session.delegate else { return }
        let (session, task) = (self.session, self.task)
        session.delegateQueue.enqueue {
            await delegate.session(session, task: task, didSendBodyData: bytes, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
        }
    }

    func transferDidWrite(bytes: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        guard let download = task as? DownloadTask else { return }
        task.lock.withLockedValue {
            $0.countOfBytesReceived = totalBytesWritten
            $0.countOfBytesExpectedToReceive = totalBytesExpectedToWrite
        }
        task.emit(.wroteData(bytes: bytes, total: totalBytesWritten, expected: totalBytesExpectedToWrite))
        guard let delegate = session.delegate else { return }
        let session = self.session
        session.delegateQueue.enqueue {
            await delegate.session(session, downloadTask: download, didWriteData: bytes, totalBytesWritten: totalBytesWritten, totalBytesExpectedToWrite: totalBytesExpectedToWrite)
        }
    }

    func transferDidResume(atOffset offset: Int64, expectedTotal: Int64) {
        task.emit(.resumed(atOffset: offset, expected: expectedTotal))
        guard offset > 0, let download = task as? DownloadTask, let delegate = session.delegate else { return }
        let session = self.session
        session.delegateQueue.enqueue {
            await delegate.session(session, downloadTask: download, didResumeAtOffset: offset, expectedTotalBytes: expectedTotal)
        }
    }

    func transferWillRetry(after delay: Duration, reason: String) {
        task.emit(.willRetry(after: delay, reason: reason))
    }
}

