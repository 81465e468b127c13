public import FerryCore

/// A server answered a background task with `401` and an HTTP Basic or Digest challenge, and
/// ferryd asks the session's owner what to do: the app's
/// `urlSession(_:task:didReceive:completionHandler:)`. Sent only to an owner whose hello said
/// ``Hello/answersChallenges``; the transfer waits for ``Request/answerChallenge(_:)`` with
/// the same ``challengeID``. When the owner leaves or lets the session go first, ferryd handles
/// it by default (the credential submitted with the task); when the task's request time-out
/// passes first, the attempt fails `timedOut`. Not stored.
///
/// ```swift
/// case .challenge(let challenge):
///     let answer = ChallengeReply(challenge, disposition: .useCredential, credential: ChallengeCredential(user: "alice", password: secret))
///     try await connection.request(.answerChallenge(answer))
/// ```
public struct TaskChallenge: Hashable, Sendable, Codable {
    /// ferryd's number for this question, to answer it by.
    public var challengeID: UInt64
    public var sessionIdentifier: String
    public var taskIdentifier: Int
    /// Where a credential is for: the request's scheme, host and port, and the challenge's realm.
    public var scheme: String
    public var host: String
    public var port: Int
    public var realm: String?
    /// `httpBasic` or `httpDigest`: the strongest challenge of the response that ferryd answers.
    public var method: String
    /// How many credentials this protection space already refused during the task.
    public var previousFailureCount: Int
    /// The `401` response's status and header fields.
    public var statusCode: Int
    public var headers: HeaderFields
    /// What ferryd would send by default: the credential submitted with the task for this
    /// realm, or the URL's own user and password. The app's own secrets: sent only to the
    /// session's owner.
    public var proposedCredential: ChallengeCredential?

    public init(
        challengeID: UInt64, sessionIdentifier: String, taskIdentifier: Int, scheme: String, host: String, port: Int,
        realm: String?, method: String, previousFailureCount: Int, statusCode: Int, headers: HeaderFields,
        proposedCredential: ChallengeCredential?
    ) {
        self.challengeID = challengeID
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
        self.scheme = scheme
        self.host = host
        self.port = port
        self.realm = realm
        self.method = method
        self.previousFailureCount = previousFailureCount
        self.statusCode = statusCode
        self.headers = headers
        self.proposedCredential = proposedCredential
    }
}

/// A user name and password, in a challenge or its answer.
public struct ChallengeCredential: Hashable, Sendable, Codable {
    public var user: String
    public var password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}

/// The owner's answer to a ``TaskChallenge``, as URLSession's `AuthChallengeDisposition`
/// says it. Reply: ``Reply/challengeAnswered(_:)``.
public struct ChallengeReply: Hashable, Sendable, Codable {
    public enum Disposition: String, Hashable, Sendable, Codable {
        /// Send the request again with ``ChallengeReply/credential``.
        case useCredential
        /// ferryd's default: the proposed credential, once; without one the `401` is the answer.
        case performDefaultHandling
        /// Fail the task (`userCancelledAuthentication`).
        case cancelAuthenticationChallenge
        /// The `401` is the task's response.
        case rejectProtectionSpace
    }

    public var challengeID: UInt64
    /// The challenge's session: only its owner may answer.
    public var sessionIdentifier: String
    public var disposition: Disposition
    /// For ``Disposition/useCredential`` (required there; ignored otherwise).
    public var credential: ChallengeCredential?

    public init(challengeID: UInt64, sessionIdentifier: String, disposition: Disposition, credential: ChallengeCredential? = nil) {
        self.challengeID = challengeID
        self.sessionIdentifier = sessionIdentifier
        self.disposition = disposition
        self.credential = credential
    }

    /// The answer to `challenge`.
    public init(_ challenge: TaskChallenge, disposition: Disposition, credential: ChallengeCredential? = nil) {
        self.init(challengeID: challenge.challengeID, sessionIdentifier: challenge.sessionIdentifier, disposition: disposition, credential: credential)
    }
}
