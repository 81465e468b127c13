import FerryCore
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// ferryd asks a session's owner about its tasks' authentication challenges, when the owner's
/// hello offers to answer them, and falls back to its default (the credential submitted with
/// the task) when the owner leaves without answering or never offered.
@Suite("ferryd: authentication challenges asked of the app", .serialized)
struct ChallengeTests {
    /// A client whose hello offers to answer challenges, attached as `session`'s owner.
    static func answeringOwner(of session: String, on ferryd: FerrydProcess) async throws -> RawClient {
        let client = try RawClient(socketPath: ferryd.socketPath)
        try await client.send(.hello(Hello(clientName: "app", pid: getpid(), answersChallenges: true)))
        guard case .welcome = try await client.next() else { throw TestFailure("no welcome") }
        _ = try await client.request(.attach(AttachSession(sessionIdentifier: session, owner: true)))
        return client
    }

    @Test("the owner is asked (realm, method, failures, the 401, the proposed credential); leaving unanswered gets the default; a stale answer is refused; a client that did not offer is never asked")
    func askedThenDefault() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()
        let url = server.baseURL + "/basic-auth/alice/secret"

        let answering = try await Self.answeringOwner(of: "c1", on: ferryd)
        var submission = TaskSubmission(sessionIdentifier: "c1", kind: .data, request: TaskRequest(url: URL(string: url)!))
        submission.credentials = [TaskCredential(realm: "ferry", user: "alice", password: "secret")]
        let task = try await answering.submit(submission)

        let pushed = try await answering.pushes(timeout: 20) { if case .challenge = $0 { true } else { false } }
        guard case .challenge(let challenge)? = pushed.last else { throw TestFailure("no challenge: \(pushed)") }
        #expect(challenge.sessionIdentifier == "c1" && challenge.taskIdentifier == task.taskIdentifier)
        #expect(challenge.realm == "ferry" && challenge.method == "httpBasic" && challenge.previousFailureCount == 0)
        #expect(challenge.statusCode == 401 && challenge.headers["WWW-Authenticate"]?.hasPrefix("Basic") == true)
        #expect(challenge.host == URL(string: url)?.host && challenge.port == URL(string: url)?.port && challenge.scheme == "http")
        #expect(challenge.proposedCredential == ChallengeCredential(user: "alice", password: "secret"), "the submitted credential")
        // Meanwhile the task says what it waits for (`ferry explain`).
        guard case .tasks(let page) = try await answering.request(.listTasks(ListTasks(sessionIdentifier: "c1"))),
            let listed = page.tasks.first(where: { $0.taskIdentifier == task.taskIdentifier })
        else { throw TestFailure("task \(task.taskIdentifier) is not listed") }
        #expect(listed.state == .running && listed.waitingReason?.kind == .authenticationChallenge, "\(listed)")
        #expect(listed.waitingReason?.message.contains("realm \"ferry\" of \(challenge.host)") == true, "\(String(describing: listed.waitingReason))")

        // The app leaves without answering: the transfer goes on with ferryd's default.
        answering.close()
        let next = try await RawClient.connected(to: ferryd.socketPath, name: "app")
        try await next.attachAfterReconnect("c1")
        let events = try await next.events(untilFinished: [task.taskIdentifier])
        guard case .response(let head)? = events.of(task.taskIdentifier).first?.kind else { throw TestFailure("no response: \(events)") }
        #expect(head.statusCode == 200, "answered with the submitted credential")

        // An answer to a challenge nobody waits for is refused.
        await #expect(throws: FerryProtocolError.self) {
            _ = try await next.request(.answerChallenge(ChallengeReply(challenge, disposition: .performDefaultHandling)))
        }
        // This client's hello did not offer: ferryd answers itself (no credential here: the 401).
        let plain = try await next.submit(TaskSubmission(sessionIdentifier: "c1", kind: .data, request: TaskRequest(url: URL(string: url)!)))
        let plainEvents = try await next.events(untilFinished: [plain.taskIdentifier])
        guard case .response(let unanswered)? = plainEvents.of(plain.taskIdentifier).first?.kind else { throw TestFailure("no response") }
        #expect(unanswered.statusCode == 401)
        #expect(!next.pushed.contains { if case .challenge = $0 { true } else { false } })
        next.close()
        try await server.shutdown()
    }

    @Test("eventsFinished waits while a challenge of the session waits for the app's answer, so an app that goes at eventsFinished answers first; it is sent once the answer is in")
    func eventsFinishedWaitsForTheAnswer() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()
        let client = try await Self.answeringOwner(of: "c4", on: ferryd)
        let challenged = try await client.submit(TaskSubmission(
            sessionIdentifier: "c4", kind: .data, request: TaskRequest(url: URL(string: server.baseURL + "/basic-auth/alice/secret")!)))
        let pushed = try await client.pushes(timeout: 20) { if case .challenge = $0 { true } else { false } }
        guard case .challenge(let challenge)? = pushed.last else { throw TestFailure("no challenge: \(pushed)") }

        // Another task of the session ends while the challenge waits: its events come, not eventsFinished.
        let plain = try await client.submit(TaskSubmission(
            sessionIdentifier: "c4", kind: .data, request: TaskRequest(url: URL(string: server.baseURL + "/bytes/10?seed=4")!)))
        let meanwhile = try await client.pushes(timeout: 20) {
            if case .event(let event) = $0, event.taskIdentifier == plain.taskIdentifier, case .completed = event.kind { true } else { false }
        }
        let quiet = try await PacingTests.pushesUntilQuiet(client, quiet: 1.0)
        let finishedEarly = (meanwhile + quiet).contains { if case .eventsFinished = $0 { true } else { false } }
        #expect(!finishedEarly, "no eventsFinished while the challenge waits: \(meanwhile + quiet)")

        _ = try await client.request(.answerChallenge(ChallengeReply(
            challenge, disposition: .useCredential, credential: ChallengeCredential(user: "alice", password: "secret"))))
        // The owed eventsFinished comes once the answer is in; the task goes on with the credential.
        let owed = try await client.pushes(timeout: 20) { if case .eventsFinished = $0 { true } else { false } }
        #expect(!owed.isEmpty, "the owed eventsFinished after the answer")
        let events = try await client.events(untilFinished: [challenged.taskIdentifier])
        guard case .response(let head)? = events.of(challenged.taskIdentifier).first?.kind else { throw TestFailure("no response: \(events)") }
        #expect(head.statusCode == 200, "the app's credential was used")
        client.close()
        try await server.shutdown()
    }

    @Test("a challenge the app does not answer within the request time-out is given up: the attempt fails timedOut, the late answer is refused with unknownChallenge")
    func unansweredTimesOut() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let server = try await TestHTTPServer.start()
        let client = try await Self.answeringOwner(of: "c2", on: ferryd)
        let request = TaskRequest(url: URL(string: server.baseURL + "/basic-auth/alice/secret")!)
        let options = TaskOptions(timeoutIntervalForRequest: 1, retryPolicy: RetryPolicy.none)
        let task = try await client.submit(TaskSubmission(
            sessionIdentifier: "c2", task: TaskDescription(kind: .data, request: request, options: options)))

        let pushed = try await client.pushes(timeout: 20) { if case .challenge = $0 { true } else { false } }
        guard case .challenge(let challenge)? = pushed.last else { throw TestFailure("no challenge: \(pushed)") }
        let events = try await client.events(untilFinished: [task.taskIdentifier])
        guard case .failed(let failure)? = events.of(task.taskIdentifier).last?.kind else { throw TestFailure("not failed: \(events)") }
        #expect(failure.code == "timedOut", "\(failure)")
        let late = await #expect(throws: FerryProtocolError.self) {
            _ = try await client.request(.answerChallenge(ChallengeReply(challenge, disposition: .useCredential, credential: ChallengeCredential(user: "alice", password: "secret"))))
        }
        #expect(late?.code == .unknownChallenge)
        client.close()
        try await server.shutdown()
    }
}
