public import Foundation

/// URLSession's delegate protocols, with the platform's method names and types. Every method
/// has a default (the platform's behaviour when a delegate does not implement it) except
/// `didFinishDownloadingTo`, which a download delegate must implement, as there.
///
/// ```swift
/// final class Uploads: NSObject, URLSessionDataDelegate, @unchecked Sendable {
///     var answers: [URLSessionTask: Data] = [:]
///     func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
///         answers[dataTask, default: Data()].append(data)
///     }
///     func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
///         print(task.taskIdentifier, (task.response as? HTTPURLResponse)?.statusCode ?? 0, error ?? "ok")
///     }
/// }
/// ```
///
/// The calls run on the session's `delegateQueue`, one at a time and in order. Swift does not
/// warn about a method that nearly matches one of these (a wrong label or type) and so is
/// never called; docs/porting.md says how Ferry catches that.
public protocol URLSessionDelegate: NSObjectProtocol, Sendable {
    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: Error?)
    /// Questions about the session's TLS connections: a server asks for a client certificate
    /// (`NSURLAuthenticationMethodClientCertificate`), and each HTTPS host's certificates
    /// (`NSURLAuthenticationMethodServerTrust`, with `protectionSpace.serverTrust`) before the
    /// session's first request to it. Default handling when not implemented.
    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
    /// Background sessions: every stored event has been delivered.
    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession)
}

public protocol URLSessionTaskDelegate: URLSessionDelegate {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void)
    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64)
    func urlSession(_ session: URLSession, taskIsWaitingForConnectivity task: URLSessionTask)
    /// HTTP Basic and Digest challenges (a `401`); default handling when not implemented.
    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
    /// The task's requests, timed; just before `didCompleteWithError`.
    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics)
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?)
}

public protocol URLSessionDataDelegate: URLSessionTaskDelegate {
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void)
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data)
}

public protocol URLSessionDownloadDelegate: URLSessionTaskDelegate {
    /// The file is deleted when this returns: move it.
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL)
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
                    totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64)
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64,
                    expectedTotalBytes: Int64)
}

extension URLSessionDelegate {
    public func urlSession(_ session: URLSession, didBecomeInvalidWithError error: Error?) {}
    public func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                           completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        // Tells the session the delegate's class does not implement it (then the task's
        // method is asked, as on the platform).
        challenge.answeredByDefault.withLock { $0 = true }
        completionHandler(.performDefaultHandling, nil)
    }
    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {}
}

extension URLSessionTaskDelegate {
    public func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                           newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(request)
    }
    public func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                           totalBytesExpectedToSend: Int64) {}
    public func urlSession(_ session: URLSession, taskIsWaitingForConnectivity task: URLSessionTask) {}
    public func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                           completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        challenge.answeredByDefault.withLock { $0 = true }
        completionHandler(.performDefaultHandling, nil)
    }
    public func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {}
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {}
}

extension URLSessionDataDelegate {
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                           completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        completionHandler(.allow)
    }
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {}
}

extension URLSessionDownloadDelegate {
    public func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
                           totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {}
    public func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64,
                           expectedTotalBytes: Int64) {}
}
