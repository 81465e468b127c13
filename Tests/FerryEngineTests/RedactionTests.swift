import FerryEngine
import Foundation
import Testing

@Suite("What reaches the logs")
struct RedactionTests {
    @Test("a URL in a log keeps scheme, host, port and path, and drops credentials, query and fragment")
    func urlIsRedacted() {
        let url = URL(string: "https://alice:s3cret@example.com:8443/files/photo.jpg?access_token=abc123&x=1#frag")!
        let shown = url.redactedForLogs
        #expect(shown == "https://example.com:8443/files/photo.jpg?…")
        #expect(!shown.contains("s3cret") && !shown.contains("abc123") && !shown.contains("alice"))
    }

    @Test("a URL without a query is shown as it is")
    func plainURLIsUnchanged() {
        #expect(URL(string: "http://127.0.0.1:8080/bytes/16")!.redactedForLogs == "http://127.0.0.1:8080/bytes/16")
    }

    @Test("an error's description carries the redacted URL, never the token")
    func errorDescriptionIsRedacted() {
        let error = FerryError(.timedOut, "no byte moved for 60 s", url: URL(string: "http://h/p?token=xyz")!)
        #expect(error.description.contains("http://h/p?…"))
        #expect(!error.description.contains("xyz"))
    }
}
