import FerryCore
import FerryEngine
import FerryProtocol
import Foundation

extension BackgroundEventRouter {
    /// A background task met an HTTP authentication challenge in ferryd: the delegate answers
    /// as it would in-process (task-level, then session-level; no delegate or no such method:
    /// the default), and ferryd's transfer goes on with the answer. Beside the router, so the
    /// events behind it are not held while the delegate decides; a task this process does not
    /// have gets ferryd's default.
    func answer(_ challenge: TaskChallenge) {
        let (session, link) = (self.session, self.link)
        session.delegateQueue.spawn {
            let answer: ChallengeAnswer
            if let task = session.backgroundTasks(challenge.taskIdentifier).first {
                answer = await TaskObserver(task: task).transferDidReceive(challenge: challenge.authenticationChallenge(url: task.currentRequest?.url ?? task.originalRequest.url))
            } else {
                answer = .performDefaultHandling
            }
            await link.answer(challenge, with: ChallengeReply(challenge, answer))
        }
    }
}

extension TaskChallenge {
    /// The engine's form of the question, as an in-process task's delegate gets it.
    func authenticationChallenge(url: URL) -> AuthenticationChallenge {
        let space = ProtectionSpace(
            host: host, port: port, scheme: scheme, realm: realm, method: AuthenticationMethod(rawValue: method) ?? .httpBasic)
        return AuthenticationChallenge(
            protectionSpace: space, previousFailureCount: previousFailureCount,
            failureResponse: Response(url: url, statusCode: statusCode, headers: headers),
            proposedCredential: proposedCredential.map { Credential(user: $0.user, password: $0.password) })
    }
}

extension ChallengeReply {
    init(_ challenge: TaskChallenge, _ answer: ChallengeAnswer) {
        switch answer {
        case .useCredential(let credential):
            self.init(challenge, disposition: .useCredential, credential: ChallengeCredential(user: credential.user, password: credential.password))
        case .performDefaultHandling: self.init(challenge, disposition: .performDefaultHandling)
        case .cancel: self.init(challenge, disposition: .cancelAuthenticationChallenge)
        case .rejectProtectionSpace: self.init(challenge, disposition: .rejectProtectionSpace)
        }
    }
}
