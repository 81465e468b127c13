import FerryCore
import Foundation
@testable import FerryProtocol
import NIOCore

/// One value of every message, request, reply and event, with every optional field set in
/// some and left out in others.
enum Fixtures {
    static let session = "com.example.app.background"
    static let url = URL(string: "https://127.0.0.1:8443/upload?name=a%20b")!
    static let date = Date(timeIntervalSince1970: 1_795_000_000.25)

    static let fullSubmission = TaskSubmission(
        sessionIdentifier: session, taskIdentifier: 4,
        task: TaskDescription(
            kind: .upload,
            request: TaskRequest(url: url, method: "POST", headers: HeaderFields([("Content-Type", "image/jpeg"), ("X-A", "1"), ("X-A", "2")])),
            bodyFile: "/home/me/.local/share/ferry/groups/group.example/photo.jpg",
            options: TaskOptions(
                idempotencyKey: "share-001", priority: 0.75, earliestBeginDate: date, taskDescription: "photo.jpg → imgur",
                timeoutIntervalForResource: 3_600, timeoutIntervalForRequest: 30,
                retryPolicy: RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(500), retryableStatuses: [503]))))

    static let minimalSubmission = TaskSubmission(
        sessionIdentifier: session, kind: .download, request: TaskRequest(url: URL(string: "http://localhost/x")!),
        resumeData: Data([0x46, 0x45, 0x52, 0x52, 0x00, 0xff]))

    static let task = TaskInfo(
        sessionIdentifier: session, taskIdentifier: 4, task: fullSubmission.task, state: .waiting,
        bytesSent: 1_024, bytesReceived: 0, bytesExpectedToSend: 4_096, bytesExpectedToReceive: nil,
        attemptCount: 2, nextAttemptDate: date.addingTimeInterval(30),
        lastError: FerryProtocolError(FerryProtocolError.Code(rawValue: "networkConnectionLost"), "the connection broke"),
        waitingReason: WaitingReason(
            kind: .backingOff, until: date.addingTimeInterval(30),
            error: FerryProtocolError(FerryProtocolError.Code(rawValue: "networkConnectionLost"), "the connection broke"),
            message: "backing off after networkConnectionLost"))

    static let hostLimitedTask = TaskInfo(
        sessionIdentifier: session, taskIdentifier: 9, task: TaskDescription(kind: .download, request: TaskRequest(url: URL(string: "http://localhost/big")!)),
        state: .waiting,
        waitingReason: WaitingReason(kind: .hostLimit, host: "localhost", message: "6 tasks already run against localhost"))

    static let bareTask = TaskInfo(
        sessionIdentifier: session, taskIdentifier: 1, task: TaskDescription(kind: .data, request: TaskRequest(url: URL(string: "http://localhost/")!)),
        state: .completed)

    static let requests: [Request] = [
        .attach(AttachSession(sessionIdentifier: session, sharedContainerIdentifier: "group.example", owner: true)),
        .attach(AttachSession(sessionIdentifier: session, owner: false)),
        .attach(AttachSession(sessionIdentifier: session, owner: true, httpMaximumConnectionsPerHost: 2)),
        .attach(AttachSession(sessionIdentifier: session, owner: true, eventWindow: 128)),
        .attach(AttachSession(sessionIdentifier: session, owner: true, eventWindow: 256, eventByteWindow: 4 << 20)),
        .attach(AttachSession(
            sessionIdentifier: session, owner: true,
            networkAccess: NetworkAccess(waitsForConnectivity: true, allowsExpensiveNetworkAccess: false, isDiscretionary: true))),
        .status,
        .metrics,
        .stop,
        .answerChallenge(ChallengeReply(
            challengeID: 9, sessionIdentifier: session, disposition: .useCredential, credential: ChallengeCredential(user: "alice", password: "pw"))),
        .answerChallenge(ChallengeReply(challengeID: 10, sessionIdentifier: session, disposition: .rejectProtectionSpace)),
        .listSessions,
        .listTasks(ListTasks(sessionIdentifier: session)),
        .listTasks(ListTasks(sessionIdentifier: session, afterTaskIdentifier: 500, limit: 100)),
        .reserveTaskIdentifier(TaskIdentifierReservation(sessionIdentifier: session)),
        .reserveTaskIdentifier(TaskIdentifierReservation(sessionIdentifier: session, count: 16)),
        .submit(fullSubmission),
        .submit(minimalSubmission),
        .suspend(TaskReference(sessionIdentifier: session, taskIdentifier: 4)),
        .resume(TaskReference(sessionIdentifier: session, taskIdentifier: 4)),
        .cancel(TaskReference(sessionIdentifier: session, taskIdentifier: 4)),
        .cancelProducingResumeData(TaskReference(sessionIdentifier: session, taskIdentifier: 4)),
        .invalidate(Invalidate(sessionIdentifier: session, cancelTasks: true)),
        .acknowledge(Acknowledge(sessionIdentifier: session, upToSequence: 42)),
        .taken(EventsTaken(sessionIdentifier: session, count: 64)),
    ]

    static let replies: [Reply] = [
        .attached(Attached(sessionIdentifier: session, owner: true, tasks: [task, bareTask])),
        .attached(Attached(sessionIdentifier: session, owner: false, tasks: [bareTask], nextAfterTaskIdentifier: 1)),
        .sessions([
            SessionInfo(sessionIdentifier: session, appBundleIdentifier: "com.example.app", sharedContainerIdentifier: "group.example",
                        isOwned: true, taskCount: 2, undeliveredEventCount: 3),
            SessionInfo(sessionIdentifier: "other", appBundleIdentifier: "com.example.other", isOwned: false, taskCount: 0, undeliveredEventCount: 0),
        ]),
        .tasks(TaskPage(tasks: [])),
        .tasks(TaskPage(tasks: [task], nextAfterTaskIdentifier: 4)),
        .tasks(TaskPage(tasks: [hostLimitedTask])),
        .status(DaemonStatus(daemonVersion: "0.1.0", pid: 4242, startedAt: date)),
        .status(DaemonStatus(
            daemonVersion: "0.1.0", pid: 1, startedAt: date, socketPath: "/run/user/1000/ferry/ferryd.sock",
            storePath: "/home/me/.local/share/ferry/ferryd.sqlite", sessionCount: 3, connectionCount: 2,
            ownedSessionCount: 1, waitingTaskCount: 10, runningTaskCount: 4, suspendedTaskCount: 1, undeliveredEventCount: 7)),
        .status(DaemonStatus(
            daemonVersion: "0.1.0", pid: 1, startedAt: date, completedTaskCount: 5, failedTaskCount: 1, cancelledTaskCount: 0,
            residentMemoryBytes: 36 << 20, activity: {
                var activity = DaemonActivity()
                activity.attempts = 8
                activity.retries = 2
                activity.bytesReceived = 1 << 30
                return activity
            }(),
            network: NetworkStatus(
                source: "netlink", hasDefaultRoute: true,
                links: [.init(name: "eth0"), .init(name: "wwan0", isExpensive: true, isCellular: true)], isOnMains: false))),
        .metrics("# TYPE ferryd_attempts_total counter\nferryd_attempts_total 8\n"),
        .stopping,
        .challengeAnswered(challengeID: 9),
        .taskIdentifier(17),
        .submitted(Submitted(task: task, existing: true)),
        .task(bareTask),
        .resumeData(CancelledWithResumeData(task: bareTask, resumeData: Data("FERRYRD\n{}".utf8))),
        .resumeData(CancelledWithResumeData(task: bareTask, resumeData: nil)),
        .invalidated(SessionReference(sessionIdentifier: session)),
        .acknowledged(Acknowledge(sessionIdentifier: session, upToSequence: 9)),
        .taken(EventsTaken(sessionIdentifier: session, count: 64)),
    ]

    static let eventKinds: [EventKind] = [
        .response(ResponseHead(statusCode: 201, headers: ["Location": "/files/1"])),
        .data(Data("{\"id\":\"abc\"}".utf8)),
        .downloadFinished(DownloadFinished(location: "/tmp/ferry/dl-1.tmp")),
        .completed,
        .failed(TransferFailure(code: "cancelled", message: "cancelled by the app", resumeData: Data([1, 2, 3]))),
        .failed(TransferFailure(code: "timedOut", message: "no progress for 60 s")),
    ]

    static let clientMessages: [ClientMessage] =
        [.hello(Hello(clientName: "ferry-cli", pid: 42)),
         .hello(Hello(protocolVersion: 3, minimumProtocolVersion: 1, clientName: "com.example.app", pid: Int32.max))]
        + requests.enumerated().map { .request(id: UInt64($0.offset) + 1, $0.element) }
        + [.request(id: UInt64.max, .listSessions)]

    static let daemonMessages: [DaemonMessage] =
        [.welcome(Welcome(protocolVersion: 1, daemonVersion: "0.1.0")),
         .refused(.unsupportedVersion(client: 2...2, daemon: 1...1)),
         .failure(id: 3, FerryProtocolError(.backgroundSessionInUseByAnotherProcess, "pid 77 owns it")),
         .progress(TaskProgress(sessionIdentifier: session, taskIdentifier: 4, bytesSent: 10, bytesReceived: 0, bytesExpectedToSend: 100)),
         .progress(TaskProgress(sessionIdentifier: session, taskIdentifier: 5)),
         .waitingForConnectivity(TaskWaiting(
            sessionIdentifier: session, taskIdentifier: 6,
            reason: WaitingReason(kind: .noNetwork, host: "example.com", message: "no network: no link that is up has a route to example.com"))),
         .eventsFinished(sessionIdentifier: session), .eventsWaiting(sessionIdentifier: "com.example.app.other"),
         .goodbye(FerryProtocolError(.frameTooLarge, "too big")),
         .challenge(TaskChallenge(
            challengeID: 9, sessionIdentifier: session, taskIdentifier: 7, scheme: "https", host: "example.com", port: 443,
            realm: "club", method: "httpDigest", previousFailureCount: 1, statusCode: 401,
            headers: ["WWW-Authenticate": "Digest realm=\"club\", nonce=\"n\""], proposedCredential: ChallengeCredential(user: "alice", password: "pw")))]
        + replies.enumerated().map { .reply(id: UInt64($0.offset), $0.element) }
        + eventKinds.enumerated().map {
            .event(Event(sequence: Int64($0.offset) + 1, sessionIdentifier: session, taskIdentifier: $0.offset == 0 ? nil : 4, kind: $0.element))
        }
        + [.event(Event(sequence: 99, sessionIdentifier: session, taskIdentifier: 4, kind: .completed, storedAt: Date(timeIntervalSince1970: 1_790_000_000.25), committedAt: Date(timeIntervalSince1970: 1_790_000_000.5)))]

    static func buffer(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
}
