import FerryCore
import FerryProtocol
import Foundation
import FerryTestSupport
import Testing

extension TaskSubmission {
    static func download(_ session: String, _ url: String, key: String? = nil) -> TaskSubmission {
        TaskSubmission(sessionIdentifier: session, kind: .download, request: TaskRequest(url: URL(string: url)!), idempotencyKey: key)
    }

    static func upload(_ session: String, _ url: String, file: URL, method: String = "PUT", key: String? = nil) -> TaskSubmission {
        TaskSubmission(
            sessionIdentifier: session, kind: .upload, request: TaskRequest(url: URL(string: url)!, method: method),
            bodyFile: file.path, idempotencyKey: key)
    }
}

extension RawClient {
    /// Attaches as owner; while ferryd has not yet seen the previous owner's socket close
    /// (it closed a moment ago), the attach is refused: ask again, for at most 5 s.
    @discardableResult
    func attachAfterReconnect(_ session: String) async throws -> Attached {
        try await eventually("ferryd to release \(session) from its previous owner", timeout: .seconds(5), every: .milliseconds(50),
                             observed: "attach refused with backgroundSessionInUseByAnotherProcess") {
            do {
                guard case .attached(let attached) = try await request(.attach(session)) else { throw TestFailure("no attach") }
                return attached
            } catch let error as FerryProtocolError where error.code == .backgroundSessionInUseByAnotherProcess {
                return nil
            }
        }
    }

    func submit(_ submission: TaskSubmission) async throws -> TaskInfo {
        guard case .submitted(let submitted) = try await request(.submit(submission)) else { throw TestFailure("not submitted") }
        return submitted.task
    }

    /// Events until every task in `tasks` has its last event (`completed` or `failed`).
    func events(untilFinished tasks: Set<Int>, timeout: Double = 60) async throws -> [Event] {
        var open = tasks
        var events: [Event] = []
        let messages = try await pushes(timeout: timeout) { message in
            if let event = message.event, let task = event.taskIdentifier {
                switch event.kind {
                case .completed, .failed: open.remove(task)
                default: break
                }
            }
            return open.isEmpty
        }
        for message in messages { if let event = message.event { events.append(event) } }
        return events
    }
}

extension Array where Element == Event {
    func of(_ task: Int) -> [Event] { filter { $0.taskIdentifier == task } }
}

extension EventKind {
    var name: String { typeName }
}

/// A file of `count` deterministic bytes in `folder`.
func makeFile(_ folder: URL, _ name: String, count: Int, seed: UInt64) throws -> URL {
    let url = folder.appendingPathComponent(name)
    try Data(TestContent.bytes(count: count, seed: seed)).write(to: url)
    return url
}
