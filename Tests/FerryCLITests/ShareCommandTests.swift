// `ferry share` fails the way every command does: one line on stderr, JSON with --json, and
// the documented exit status (not ArgumentParser's "Error: …" and 1).
import FerryTestSupport
import Foundation
import Testing

@Suite struct ShareCommandTests {
    @Test("an unreadable file: exit 26 (cannot read), a one-line message, the error as JSON")
    func unreadableFile() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let environment = ["FERRY_DATA_DIR": scratch.url.path + "/data", "FERRY_RUNTIME_DIR": scratch.url.path + "/run"]
        let run = try await FerryBinary.run(["share", "/nonexistent/photo.jpg", "--list", "--json"], in: scratch.url, environment: environment)
        #expect(run.status == 26, "\(run.stderr)")
        #expect(run.stderr.contains("ferry: cannot read /nonexistent/photo.jpg"))
        #expect(!run.stderr.contains("CLIFailure"))
        let error = try #require(run.json?["error"] as? [String: Any], "stdout: \(run.stdout)")
        #expect(error["code"] as? String == "cannotReadFile")
    }

    @Test("nothing installed accepts the items: exit 1 with one line saying so")
    func noExtension() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let environment = ["FERRY_DATA_DIR": scratch.url.path + "/data", "FERRY_RUNTIME_DIR": scratch.url.path + "/run"]
        let run = try await FerryBinary.run(["share", "--text", "hello"], in: scratch.url, environment: environment)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr == "ferry: no installed share extension accepts these items\n", "\(run.stderr)")
    }
}
