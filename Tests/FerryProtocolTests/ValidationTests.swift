import FerryProtocol
import Foundation
import Testing

@Suite("Submission validation")
struct ValidationTests {
    static func submission(_ change: (inout TaskSubmission) -> Void) -> TaskSubmission {
        var submission = Fixtures.fullSubmission
        change(&submission)
        return submission
    }

    @Test("the fixtures are valid")
    func valid() throws {
        try Fixtures.fullSubmission.validate()
        try Fixtures.minimalSubmission.validate()
    }

    @Test("a bad field is named in a badRequest error", arguments: [
        (submission { $0.sessionIdentifier = "" }, "session identifier"),
        (submission { $0.taskIdentifier = 0 }, "task identifiers"),
        (submission { $0.request.url = URL(string: "file:///etc/passwd")! }, "http or https"),
        (submission { $0.request.url = URL(string: "http:relative")! }, "http or https"),
        (submission { $0.request.method = "GET /x" }, "method"),
        (submission { $0.request.method = "" }, "method"),
        (submission { $0.bodyFile = nil }, "body file"),
        (submission { $0.bodyFile = "relative/photo.jpg" }, "absolute"),
        (submission { $0.kind = .download; $0.destination = "out.bin" }, "absolute"),
        (submission { $0.priority = 1.5 }, "priority"),
        (submission { $0.priority = .nan }, "priority"),
        (submission { $0.idempotencyKey = "" }, "idempotency key"),
        (submission { $0.resumeData = Data([1]) }, "resume data"),
        (submission { $0.timeoutIntervalForResource = 0 }, "timeoutIntervalForResource"),
        (submission { $0.timeoutIntervalForRequest = -1 }, "timeoutIntervalForRequest"),
        (submission { $0.timeoutIntervalForRequest = .infinity }, "timeoutIntervalForRequest"),
    ])
    func invalid(_ submission: TaskSubmission, _ mentions: String) {
        let error = #expect(throws: FerryProtocolError.self) { try submission.validate() }
        #expect(error?.code == .badRequest)
        #expect(error?.message.contains(mentions) == true, "\(error?.message ?? "")")
    }
}

@Suite("Request validation")
struct RequestValidationTests {
    @Test("every fixture request is valid")
    func fixtures() throws {
        for request in Fixtures.requests { try request.validate() }
    }

    @Test("bad identifiers and sequences are refused", arguments: [
        Request.listTasks(ListTasks(sessionIdentifier: "")),
        .listTasks(ListTasks(sessionIdentifier: "s", limit: 0)),
        .attach(AttachSession(sessionIdentifier: String(repeating: "x", count: 1025))),
        .attach(AttachSession(sessionIdentifier: "s", sharedContainerIdentifier: "")),
        .attach(AttachSession(sessionIdentifier: "s", httpMaximumConnectionsPerHost: 0)),
        .attach(AttachSession(sessionIdentifier: "s", httpMaximumConnectionsPerHost: 65)),
        .attach(AttachSession(sessionIdentifier: "s", eventWindow: 0)),
        .attach(AttachSession(sessionIdentifier: "s", eventWindow: AttachSession.maximumEventWindow + 1)),
        .attach(AttachSession(sessionIdentifier: "s", eventByteWindow: 1 << 20)),
        .attach(AttachSession(sessionIdentifier: "s", eventWindow: 8, eventByteWindow: AttachSession.eventByteWindowRange.lowerBound - 1)),
        .attach(AttachSession(sessionIdentifier: "s", eventWindow: 8, eventByteWindow: AttachSession.eventByteWindowRange.upperBound + 1)),
        .taken(EventsTaken(sessionIdentifier: "s", count: -1)),
        .cancel(TaskReference(sessionIdentifier: "s", taskIdentifier: 0)),
        .acknowledge(Acknowledge(sessionIdentifier: "s", upToSequence: -1)),
        .acknowledge(Acknowledge(sessionIdentifier: "s", upToSequence: 1, sequences: [3, 0])),
        .acknowledge(Acknowledge(sessionIdentifier: "s", upToSequence: 1, sequences: Array(repeating: 5, count: Acknowledge.maximumSequences + 1))),
        .submit(ValidationTests.submission { $0.priority = -1 }),
        .answerChallenge(ChallengeReply(challengeID: 1, sessionIdentifier: "s", disposition: .useCredential)),
        .answerChallenge(ChallengeReply(
            challengeID: 1, sessionIdentifier: "s", disposition: .useCredential,
            credential: ChallengeCredential(user: "u", password: String(repeating: "p", count: 9000)))),
        .answerChallenge(ChallengeReply(challengeID: 1, sessionIdentifier: "", disposition: .performDefaultHandling)),
    ])
    func invalid(_ request: Request) {
        let error = #expect(throws: FerryProtocolError.self) { try request.validate() }
        #expect(error?.code == .badRequest)
    }
}
