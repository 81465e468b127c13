// The messages an app reads most from ferryd (a download's response, file and completion
// events, progress, the answer to an acknowledgement), decoded side by side by the library's
// reader (`MessageCoder.decode(DaemonMessage.self, from:)`) and by Foundation's JSONDecoder
// (the same call reached generically), ROUNDS rounds of COUNT each, alternating; medians.
//
//   swift build -c release --product MessageDecoding && .build/release/MessageDecoding [COUNT] [ROUNDS]
import FerryCore
import FerryProtocol
import Foundation
import NIOCore

let arguments = CommandLine.arguments
let count = arguments.count > 1 ? Int(arguments[1]) ?? 20_000 : 20_000
let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5
let coder = MessageCoder()

/// Foundation's decoder: in a generic context the call binds to the generic `decode`.
func throughJSONDecoder<Message: Decodable>(_ type: Message.Type, _ payload: ByteBuffer) throws -> Message {
    try coder.decode(type, from: payload)
}

let stored = Date(timeIntervalSince1970: 1_795_713_260.4811506)
let session = "bench.latency.3"
let head = ResponseHead(
    statusCode: 200,
    headers: ["Content-Type": "application/octet-stream", "Content-Length": "16384", "Date": "Thu, 26 Nov 2026 17:00:00 GMT", "Server": "ferry-testserver"],
    url: URL(string: "http://127.0.0.1:45727/gate/latency?count=1000&n=17"))
let messages: [(String, DaemonMessage)] = [
    ("response event", .event(Event(sequence: 1234, sessionIdentifier: session, taskIdentifier: 17, kind: .response(head), storedAt: stored, committedAt: stored))),
    ("downloadFinished event", .event(Event(
        sequence: 1235, sessionIdentifier: session, taskIdentifier: 17,
        kind: .downloadFinished(DownloadFinished(location: "/var/tmp/ferry/data/downloads/bench.latency.3/17.download")), storedAt: stored, committedAt: stored))),
    ("completed event", .event(Event(sequence: 1236, sessionIdentifier: session, taskIdentifier: 17, kind: .completed, storedAt: stored, committedAt: stored))),
    ("progress", .progress(TaskProgress(sessionIdentifier: session, taskIdentifier: 17, bytesReceived: 16384, bytesExpectedToReceive: 16384))),
    ("acknowledged reply", .reply(id: 99, .acknowledged(Acknowledge(sessionIdentifier: session, upToSequence: 1200, sequences: [1233, 1236])))),
]

func microseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return (Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(count)
}

print("message                   reader µs  JSONDecoder µs  JSONDecoder/reader")
for (name, message) in messages {
    let payload = try coder.encode(message)
    guard try coder.decode(DaemonMessage.self, from: payload) == message, try throughJSONDecoder(DaemonMessage.self, payload) == message else {
        print("\(name): a decoding differs from the message")
        exit(1)
    }
    var reader: [Double] = []
    var decoder: [Double] = []
    for _ in 0..<rounds {
        reader.append(try microseconds { for _ in 0..<count { _ = try coder.decode(DaemonMessage.self, from: payload) } })
        decoder.append(try microseconds { for _ in 0..<count { _ = try throughJSONDecoder(DaemonMessage.self, payload) } })
    }
    let (r, d) = (reader.sorted()[rounds / 2], decoder.sorted()[rounds / 2])
    print(name.padding(toLength: 26, withPad: " ", startingAt: 0) + String(format: "%9.2f  %14.2f  %18.1f", r, d, d / r))
}
