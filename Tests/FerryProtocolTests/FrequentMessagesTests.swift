import FerryCore
@testable import FerryProtocol
import Foundation
import NIOCore
import Testing

/// The messages written by hand are the encoder's text, byte for byte.
@Suite("Frequent messages written without the encoder")
struct FrequentMessagesTests {
    static let sessions = StoredEventEncodingTests.sessions + ["\u{01}\u{1F}\u{08}\u{0C}/slash", "\u{7F}\u{2028}"]

    /// The same value through `JSONEncoder` (the generic `encode`, reached through an existential).
    static func throughEncoder(_ value: any Encodable) throws -> ByteBuffer { try MessageCoder().encode(value) }

    @Test("progress with and without expected sizes, eventsFinished, for tricky session names")
    func messages() throws {
        let coder = MessageCoder()
        for session in Self.sessions {
            let messages: [DaemonMessage] = [
                .progress(TaskProgress(sessionIdentifier: session, taskIdentifier: 3)),
                .progress(TaskProgress(
                    sessionIdentifier: session, taskIdentifier: 12, bytesSent: 5, bytesReceived: 1 << 40,
                    bytesExpectedToSend: 6, bytesExpectedToReceive: -1)),
                .progress(TaskProgress(sessionIdentifier: session, taskIdentifier: 0, bytesReceived: 9, bytesExpectedToReceive: 10)),
                .eventsFinished(sessionIdentifier: session),
            ]
            for message in messages {
                let written = try coder.encode(message)
                #expect(String(buffer: written) == String(buffer: try Self.throughEncoder(message)), "\(message)")
                #expect(try coder.decode(DaemonMessage.self, from: written) == message)
            }
        }
    }

    @Test("the response, data and completed kinds as stored: the encoder's text")
    func kinds() throws {
        let coder = MessageCoder()
        var kinds: [EventKind] = [.completed, .data(Data()), .data(Data([0, 255, 10])), .data(Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }))]
        let tricky: HeaderFields = [
            "Content-Type": "text/plain; charset=\"utf-8\"", "X-Path": "/a\\b/c", "X-Control": "\u{01}\t\u{1F}\u{7F}",
            "X-Unicode": "caf\u{E9} \u{2028} \u{1F600}", "Set-Cookie": "a=1", "set-cookie": "b=2", "": "",
        ]
        let urls: [URL?] = [
            nil, URL(string: "http://127.0.0.1:8080/"), URL(string: "https://example.com/a%20b/c?q=1&r=/x#frag"),
            URL(string: "http://[::1]:81/caf%C3%A9?x=%22y%22"), URL(string: "file:///tmp/a%20b"),
        ]
        for url in urls {
            for headers in [HeaderFields(), tricky] {
                for status in [200, 404, 0, 999] { kinds.append(.response(ResponseHead(statusCode: status, headers: headers, url: url))) }
            }
        }
        for kind in kinds {
            let written = try coder.encode(kind)
            #expect(String(buffer: written) == String(buffer: try Self.throughEncoder(kind)), "\(kind.typeName)")
            #expect(try coder.decode(EventKind.self, from: written) == kind)
        }
    }

    /// Tasks of every kind and option, as submissions' answers carry them.
    static let tasks: [TaskInfo] = {
        let tricky: HeaderFields = ["X-Control": "\u{01}\t", "X-Unicode": "caf\u{E9} \u{2028}", "Set-Cookie": "a=1", "set-cookie": "b=2"]
        var tasks: [TaskInfo] = []
        for session in Self.sessions {
            for kind in [TaskKind.download, .upload, .data] {
                var options = TaskOptions(taskDescription: "photo \"1\"\n/2")
                options.idempotencyKey = "key-\(session)"
                options.priority = kind == .data ? 1 : 0.25
                options.earliestBeginDate = Date(timeIntervalSince1970: 1_795_713_260.4811506)
                options.timeoutIntervalForRequest = 30
                options.timeoutIntervalForResource = 0.1
                options.deliverTo = kind == .download ? "/home/u/Downloads/a b.iso" : nil
                options.retryPolicy = kind == .data ? nil : kind == .upload ? .untilResourceTimeout : RetryPolicy(
                    maximumAttempts: 3, initialDelay: .milliseconds(1500), maximumDelay: .seconds(30), retryableStatuses: [503, 429, 500, 502])
                options.expectedSHA256 = kind == .download ? String(repeating: "ab", count: 32) : nil
                let description = TaskDescription(
                    kind: kind, request: TaskRequest(url: URL(string: "https://example.com/a%20b/c?q=1&r=/x#frag")!, method: kind == .upload ? "PUT" : "GET", headers: tricky),
                    bodyFile: kind == .upload ? "/tmp/body \u{1F600}" : nil, destination: kind == .download ? "/tmp/dest" : nil, options: options)
                tasks.append(TaskInfo(sessionIdentifier: session, taskIdentifier: 7, task: description, state: .waiting))
                // A new task's answer says why it waits: ready, or until a time at a host.
                tasks.append(TaskInfo(
                    sessionIdentifier: session, taskIdentifier: 8, task: description, state: .waiting,
                    waitingReason: WaitingReason(kind: .ready, message: "ready: starts as soon as a connection is free")))
                tasks.append(TaskInfo(
                    sessionIdentifier: session, taskIdentifier: 9, task: description, state: .waiting,
                    waitingReason: WaitingReason(kind: .beginDate, until: Date(timeIntervalSince1970: 1_795_713_260.25), host: session, message: "waiting for \"\(session)\"")))
                tasks.append(TaskInfo(
                    sessionIdentifier: session, taskIdentifier: Int.max, task: description, state: .completed, bytesSent: 1 << 40, bytesReceived: 5,
                    bytesExpectedToSend: 6, bytesExpectedToReceive: -1, attemptCount: 3, nextAttemptDate: Date(timeIntervalSince1970: 100),
                    responseStatus: 404, deliveredTo: "/home/u/Downloads/a b (1).iso", eventsPending: false))
            }
        }
        // The plainest: no options, no headers, an identifier of zero.
        tasks.append(TaskInfo(sessionIdentifier: "s", taskIdentifier: 0, task: TaskDescription(kind: .download, request: TaskRequest(url: URL(string: "http://127.0.0.1:8080/")!)), state: .running, eventsPending: true))
        return tasks
    }()

    @Test("submitted and acknowledged replies, for tasks of every kind and option: the encoder's text; a task with an error (its own or its waiting reason's) goes through the encoder")
    func replies() throws {
        let coder = MessageCoder()
        let tasks = Self.tasks
        for (index, task) in tasks.enumerated() {
            let message = DaemonMessage.reply(id: UInt64(index), .submitted(Submitted(task: task, existing: index % 2 == 0)))
            let written = try coder.encode(message)
            #expect(String(buffer: written) == String(buffer: try Self.throughEncoder(message)), "task \(index)")
            #expect(try coder.decode(DaemonMessage.self, from: written) == message)
        }
        for sequences in [nil, [], [1, Int64.max]] as [[Int64]?] {
            let message = DaemonMessage.reply(id: .max, .acknowledged(Acknowledge(sessionIdentifier: "s\u{01}", upToSequence: 41, sequences: sequences)))
            let written = try coder.encode(message)
            #expect(String(buffer: written) == String(buffer: try Self.throughEncoder(message)), "\(String(describing: sequences))")
            #expect(try coder.decode(DaemonMessage.self, from: written) == message)
        }
        // What only the encoder writes: still the encoder's text.
        var failed = tasks[0]
        failed.lastError = FerryProtocolError(.internalError, "boom")
        var waiting = tasks[0]
        waiting.waitingReason = WaitingReason(kind: .backingOff, until: Date(timeIntervalSince1970: 200), error: FerryProtocolError(.internalError, "boom"), message: "backing off")
        var endless = tasks[0]
        endless.task.options.timeoutIntervalForResource = .infinity
        for task in [failed, waiting] {
            #expect(MessageCoder.frequentReply(id: 1, .submitted(Submitted(task: task, existing: false))) == nil)
            let message = DaemonMessage.reply(id: 1, .submitted(Submitted(task: task, existing: false)))
            #expect(try coder.decode(DaemonMessage.self, from: try coder.encode(message)) == message)
        }
        #expect(MessageCoder.frequentReply(id: 1, .submitted(Submitted(task: endless, existing: false))) == nil)
    }

    @Test("an app's submit request, for tasks of every kind and option, with and without its identifier and resume data: the encoder's text; with credentials, through the encoder")
    func submitRequests() throws {
        let coder = MessageCoder()
        for (index, info) in Self.tasks.enumerated() {
            var submission = TaskSubmission(sessionIdentifier: info.sessionIdentifier, task: info.task)
            if index % 2 == 1 { submission.taskIdentifier = index + 1 }
            if index % 3 == 2, info.task.kind == .download { submission.resumeData = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 13) }) }
            let message = ClientMessage.request(id: UInt64(index), .submit(submission))
            let written = try coder.encode(message)
            #expect(String(buffer: written) == String(buffer: try Self.throughEncoder(message)), "task \(index)")
            #expect(try coder.decode(ClientMessage.self, from: written) == message)
        }
        var withCredentials = TaskSubmission(sessionIdentifier: "s", task: Self.tasks[0].task)
        withCredentials.credentials = [TaskCredential(realm: "r", user: "u", password: "p")]
        #expect(MessageCoder.submissionObject(withCredentials) == nil)
        let message = ClientMessage.request(id: 1, .submit(withCredentials))
        #expect(try coder.decode(ClientMessage.self, from: try coder.encode(message)) == message)
    }
}
