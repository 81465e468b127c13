import FerryCore
import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

/// `ferry list` pages through a session of more tasks than one page holds, printing each page
/// as it comes: every task once, in order, in one JSON document.
@Suite("ferry list pages")
struct ListPagingTests {
    @Test("1,250 tasks (three pages) are listed once each, in order, as one JSON array; the text form has a line each")
    func threePages() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let client = try await ferryd.owner(of: "many")
        let count = 1_250
        for index in 0..<count {
            var submission = TaskSubmission.download("many", "http://127.0.0.1:9/never/\(index)")
            submission.options.earliestBeginDate = Date().addingTimeInterval(86_400)
            _ = try await client.submit(submission)
        }
        let ferry = try BuiltProducts.path(of: "ferry")
        let environment = ["FERRY_DATA_DIR": ferryd.dataDirectory.path, "FERRY_RUNTIME_DIR": ferryd.runtimeDirectory.path]
        let out = ferryd.root.appendingPathComponent("list.json")
        let list = try SpawnedProcess.start(ferry, ["list", "--json", "--session", "many"], environment: environment, log: out)
        #expect(try await list.exit(within: .seconds(60)) == 0)
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: out)) as? [[String: Any]]
        let listing = try #require(document?.first, "not one JSON array of listings: \(String(list.output.prefix(300)))")
        #expect(document?.count == 1)
        #expect((listing["session"] as? [String: Any])?["sessionIdentifier"] as? String == "many")
        let identifiers = (listing["tasks"] as? [[String: Any]] ?? []).compactMap { $0["taskIdentifier"] as? Int }
        #expect(identifiers == Array(1...count))

        let text = ferryd.root.appendingPathComponent("list.txt")
        let plain = try SpawnedProcess.start(ferry, ["list", "--session", "many"], environment: environment, log: text)
        #expect(try await plain.exit(within: .seconds(60)) == 0)
        let lines = plain.output.split(separator: "\n")
        #expect(lines.count == count + 1, "a header and a line per task: \(lines.prefix(3))")
    }
}
