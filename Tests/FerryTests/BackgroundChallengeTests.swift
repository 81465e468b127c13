import Ferry
import FerryTestSupport
import Foundation
import Testing

/// A background session's authentication challenges reach its delegate, as on the platform:
/// ferryd asks the app that owns the session and waits for the answer.
@Suite("Background sessions: authentication challenges", .serialized)
struct BackgroundChallengeTests {
    @Test("ferryd asks the app's delegate: a refused credential comes back with previousFailureCount 1, the next is used; cancel fails the task")
    func delegateAnswers() async throws {
        try await withDaemonAndServer { daemon, server in
            let url = server.url("/basic-auth/alice/secret")
            let answering = BackgroundAnswers([
                URLCredential(user: "alice", password: "wrong", persistence: .none),
                URLCredential(user: "alice", password: "secret", persistence: .none),
            ])
            let session = URLSession(configuration: URLSessionConfiguration(daemon.configuration("bg.challenge")), delegate: answering, delegateQueue: nil)
            session.dataTask(with: url).resume()
            try await poll(until: "the task to complete", timeout: .seconds(20)) { answering.completions.count == 1 }
            #expect(answering.completions.first.map { $0 == nil } == true, "\(answering.completions)")
            #expect(answering.asked.map(\.failures) == [0, 1])
            #expect(answering.asked.first?.method == NSURLAuthenticationMethodHTTPBasic && answering.asked.first?.realm == "ferry")
            #expect(answering.asked.first?.host == url.host && answering.asked.first?.port == url.port)
            #expect(answering.statuses == [200] && answering.body == "authenticated alice", "\(answering.statuses) \(answering.body)")
            session.finishTasksAndInvalidate()

            let cancelling = BackgroundAnswers([])
            let other = URLSession(configuration: URLSessionConfiguration(daemon.configuration("bg.challenge.cancel")), delegate: cancelling, delegateQueue: nil)
            other.dataTask(with: url).resume()
            try await poll(until: "the cancelled task to complete", timeout: .seconds(20)) { cancelling.completions.count == 1 }
            #expect((cancelling.completions.first as? URLError)?.code == .userCancelledAuthentication, "\(cancelling.completions)")
            #expect(cancelling.asked.count == 1 && cancelling.statuses.isEmpty)
            other.finishTasksAndInvalidate()
        }
    }

    @Test("while the app has not answered, ferry explain says the running task waits for it (the realm and host); answered, it completes")
    func explainSaysItWaits() async throws {
        try await withDaemonAndServer { daemon, server in
            let url = server.url("/basic-auth/alice/secret")
            let answering = BackgroundAnswers([URLCredential(user: "alice", password: "secret", persistence: .none)], holds: true)
            let session = URLSession(configuration: URLSessionConfiguration(daemon.configuration("bg.challenge.held")), delegate: answering, delegateQueue: nil)
            let task = session.dataTask(with: url)
            task.resume()
            try await poll(until: "the delegate to be asked", timeout: .seconds(20)) { answering.asked.count == 1 }
            let explained = try await runFerry(["explain", "\(task.taskIdentifier)", "--session", "bg.challenge.held"], environment: daemon.environment)
            #expect(explained.status == 0, "\(explained.output)")
            let said = explained.output.split(separator: "\n").last.map(String.init)
            #expect(said == "it is running; it waits for its app to answer an authentication challenge (httpBasic, realm \"ferry\" of \(url.host ?? "?"))",
                    "\(explained.output)")
            answering.release()
            try await poll(until: "the task to complete", timeout: .seconds(20)) { answering.completions.count == 1 }
            #expect(answering.completions.first.map { $0 == nil } == true && answering.statuses == [200], "\(answering.completions) \(answering.statuses)")
            session.finishTasksAndInvalidate()
        }
    }
}

/// Answers each challenge with the next credential, or cancels when none is left; records the
/// questions, the responses, the body and the completions.
private final class BackgroundAnswers: NSObject, URLSessionDataDelegate, @unchecked Sendable {  // state behind the lock
    struct Asked {
        var failures: Int
        var method: String
        var realm: String?
        var host: String
        var port: Int
    }
    private let lock = NSLock()
    private var credentials: [URLCredential]
    private var _asked: [Asked] = []
    private var _statuses: [Int] = []
    private var _body = Data()
    private var _completions: [(any Error)?] = []
    var asked: [Asked] { lock.withLock { _asked } }
    var statuses: [Int] { lock.withLock { _statuses } }
    var body: String { lock.withLock { String(decoding: _body, as: UTF8.self) } }
    var completions: [(any Error)?] { lock.withLock { _completions } }

    /// Answers held back until ``release()`` (when made with `holds`).
    private let holds: Bool
    private var held: [@Sendable () -> Void] = []

    init(_ credentials: [URLCredential], holds: Bool = false) {
        self.credentials = credentials
        self.holds = holds
    }

    /// Sends the answers held back so far.
    func release() {
        for answer in lock.withLock({ () -> [@Sendable () -> Void] in defer { held = [] }; return held }) { answer() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        let space = challenge.protectionSpace
        let next: URLCredential? = lock.withLock {
            _asked.append(Asked(failures: challenge.previousFailureCount, method: space.authenticationMethod, realm: space.realm, host: space.host, port: space.port))
            return credentials.isEmpty ? nil : credentials.removeFirst()
        }
        let answer: @Sendable () -> Void = {
            if let next { completionHandler(.useCredential, next) } else { completionHandler(.cancelAuthenticationChallenge, nil) }
        }
        if holds { lock.withLock { held.append(answer) } } else { answer() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        lock.withLock { _statuses.append((response as? HTTPURLResponse)?.statusCode ?? 0) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { _body.append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.withLock { _completions.append(error) }
    }
}
