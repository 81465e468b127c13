// Exit codes and messages: bad URLs, refused connections, HTTP errors, time-outs, secrets.
import FerryTestSupport
import Foundation
import Testing

@Suite(.serialized) struct ErrorTests {
    @Test(arguments: ["htp://127.0.0.1/x", "http://", "not a url", "ftp://127.0.0.1/file"])
    func badURLExitsWith2(url: String) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try await FerryBinary.run(["get", url], in: scratch.url)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("not a valid URL"))
        #expect(run.stderr.contains("Usage: ferry get"))
    }

    @Test func badHeaderAndBadSHA256AreUsageErrors() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let header = try await FerryBinary.run(["get", "http://127.0.0.1:9/x", "-H", "NoColonHere"], in: scratch.url)
        #expect(header.status == 2)
        #expect(header.stderr.contains("Name: value"))
        let digest = try await FerryBinary.run(["get", "http://127.0.0.1:9/x", "--sha256", "xyz"], in: scratch.url)
        #expect(digest.status == 2)
        #expect(digest.stderr.contains("64 hexadecimal digits"))
        let method = try await FerryBinary.run(["put", "f", "http://127.0.0.1:9/x", "--method", "PATCH"], in: scratch.url)
        #expect(method.status == 2)
    }

    @Test func refusedConnectionExitsWith7AndKeepsSecretsOut() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // Port 9 (discard) on loopback: nothing listens there.
        let run = try await FerryBinary.run(
            ["get", "http://127.0.0.1:9/file.bin?token=SECRET-QUERY", "-H", "Authorization: Bearer SECRET-HEADER", "--json"], in: scratch.url)
        #expect(run.status == 7, "\(run.stderr)")
        #expect(run.stderr.contains("could not connect"))
        #expect(!run.stderr.contains("SECRET") && !run.stdout.contains("SECRET"))
        let error = try #require(run.json?["error"] as? [String: Any], "stdout: \(run.stdout)")
        #expect(error["code"] as? String == "cannotConnectToHost")
        #expect(error["message"] is String)
        #expect(!FileManager.default.fileExists(atPath: scratch.path("file.bin")))
    }

    @Test func httpErrorExitsWith22AndWritesNothing() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try await FerryBinary.run(["get", "\(server.baseURL)/status/404?key=SECRET", "-o", scratch.path("page"), "--json"], in: scratch.url)
        #expect(run.status == 22, "\(run.stderr)")
        #expect(run.stderr.contains("404"))
        #expect(!run.stderr.contains("SECRET"))
        let error = try #require(run.json?["error"] as? [String: Any], "stdout: \(run.stdout)")
        #expect(error["code"] as? String == "httpError")
        #expect(error["status"] as? Int == 404)
        #expect(!FileManager.default.fileExists(atPath: scratch.path("page")))
        try await server.shutdown()
    }

    @Test func stalledServerTimesOutWith28() async throws {
        let server = try await TestHTTPServer.start()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try await FerryBinary.run(["get", "\(server.baseURL)/slow-headers/5000", "-o", scratch.path("slow"), "--timeout", "1"], in: scratch.url, timeout: 20)
        #expect(run.status == 28, "\(run.stderr)")
        #expect(run.stderr.contains("no data for"))
        try await server.shutdown()
    }

    @Test func missingUploadFileExitsWith26() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try await FerryBinary.run(["put", scratch.path("nope.bin"), "http://127.0.0.1:9/upload", "--json"], in: scratch.url)
        #expect(run.status == 26, "\(run.stderr)")
        #expect(run.stderr.contains("no such file"))
        #expect((run.json?["error"] as? [String: Any])?["code"] as? String == "fileDoesNotExist")
    }

    @Test func helpDocumentsTheExitCodes() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try await FerryBinary.run(["--help"], in: scratch.url)
        #expect(run.status == 0)
        #expect(run.stdout.contains("22  the server answered with an HTTP status of 400 or more"))
    }
}
