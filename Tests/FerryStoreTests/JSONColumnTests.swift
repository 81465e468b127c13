import FerryCore
import Foundation
@testable import FerryStore
import Testing

/// JSON columns read again are not decoded again (`JSONColumn`'s values), except secrets.
/// The values are the process's: another test's reads can empty them at their limit between
/// two lines here, so a check that a value is remembered reads again before it fails.
@Suite("JSON columns", .serialized)
struct JSONColumnTests {
    @Test("a task's headers read twice are decoded once and equal; its credentials are never kept")
    func remembered() async throws {
        try await withStore { (store, _) async throws in
            var task = NewTask(
                sessionIdentifier: "s",
                task: TaskDescription(
                    kind: .upload,
                    request: TaskRequest(url: URL(string: "https://example.com/up")!, method: "PUT", headers: ["X-Remembered": UUID().uuidString]),
                    bodyFile: "/tmp/body.bin"))
            let secret = UUID().uuidString
            task.credentials = [TaskCredential(realm: "r", user: "u", password: secret)]
            _ = try await store.submit(task)
            let first = try #require(try await store.task(session: "s", task: 1))
            let headersText = try JSONColumn.text(task.task.request.headers)
            var remembered = JSONColumn.decoded(HeaderFields.self, headersText)
            for _ in 0..<3 where remembered == nil {
                _ = try await store.task(session: "s", task: 1)
                remembered = JSONColumn.decoded(HeaderFields.self, headersText)
            }
            #expect(remembered == task.task.request.headers, "the headers' value is remembered by its text")
            let again = try #require(try await store.task(session: "s", task: 1))
            #expect(again.task.request.headers == first.task.request.headers)
            #expect(again.credentials == task.credentials && first.credentials == task.credentials)
            let credentialsText = try JSONColumn.text(task.credentials)
            #expect(JSONColumn.decoded([TaskCredential].self, credentialsText) == nil, "credentials are decoded each time, kept nowhere")
        }
    }

    @Test("the remembered values stay under their limit, whatever the texts")
    func bounded() throws {
        for number in 0..<(JSONColumn.cacheLimit * 2 + 3) {
            JSONColumn.remember(HeaderFields([("N", "\(number)")]), "bounded-\(number)")
        }
        #expect(JSONColumn.count <= JSONColumn.cacheLimit)
        let last = HeaderFields([("N", "last")])
        var found: HeaderFields?
        for _ in 0..<3 where found == nil {
            JSONColumn.remember(last, "bounded-last")
            found = JSONColumn.decoded(HeaderFields.self, "bounded-last")
        }
        #expect(found == last, "what was remembered last is found")
    }
}
