import FerryCore
@testable import FerryProtocol
import Foundation
import Testing

/// The messages of every task (a submission and its answer) take the hand-written path with a
/// real ferryd's values, not the encoder and decoder behind it: a first version fell back for
/// every new task, whose answer says why it waits, and no unit test of made-up values noticed.
@Suite("A real submission and its answer are written and read by hand")
struct HandWrittenMessagesTests {
    @Test("a download, and one for later with a retry policy and time-outs: the request is written by hand; ferryd's answer is written by hand and read by hand into the decoder's value")
    func submissionsByHand() async throws {
        let ferryd = try await InProcessDaemon()
        let client = try await ferryd.client()
        try await client.request(.attach("s"))
        var later = TaskSubmission.download("s", "http://127.0.0.1:9/later", key: "later")
        later.earliestBeginDate = Date().addingTimeInterval(3600)
        later.retryPolicy = .standard
        later.timeoutIntervalForRequest = 30
        later.timeoutIntervalForResource = 600
        later.taskDescription = "for later"
        for submission in [TaskSubmission.download("s", "http://127.0.0.1:9/now"), later] {
            #expect(MessageCoder.submissionObject(submission) != nil, "the request went to the encoder: \(submission)")
            let info = try await client.submit(submission)
            #expect(info.waitingReason != nil, "a new task's answer says why it waits")
            let answer = Reply.submitted(Submitted(task: info, existing: false))
            #expect(MessageCoder.frequentReply(id: 7, answer) != nil, "the answer went to the encoder: \(info)")
            let payload = try MessageCoder().encode(DaemonMessage.reply(id: 7, answer))
            #expect(FrequentMessageReader.message(payload) == .reply(id: 7, answer), "the answer was left to the decoder: \(String(buffer: payload))")
        }
        await ferryd.shutdown()
    }
}
