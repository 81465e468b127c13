import Ferry
import FerryTestSupport
import Foundation
import Testing

/// HTTP Basic and Digest through URLSession's spelling, against the test server (whose Digest
/// check is itself checked with curl's `--digest`).
@Suite("HTTP authentication")
struct AuthenticationTests {
    @Test("the delegate answers a Basic challenge; a refused credential comes back with previousFailureCount 1; cancel fails the task")
    func delegateAnswers() async throws {
        try await withServer { server in
            let answers = Answers([
                URLCredential(user: "alice", password: "wrong", persistence: .none),
                URLCredential(user: "alice", password: "secret", persistence: .forSession),
            ])
            let session = URLSession(configuration: .ephemeral, delegate: answers, delegateQueue: nil)
            let (data, response) = try await session.data(from: server.url("/basic-auth/alice/secret"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200 && String(decoding: data, as: UTF8.self) == "authenticated alice")
            #expect(answers.asked.map(\.failures) == [0, 1])
            #expect(answers.asked.first?.method == NSURLAuthenticationMethodHTTPBasic && answers.asked.first?.realm == "ferry")
            let space = try #require(answers.asked.first?.space)
            #expect(session.configuration.urlCredentialStorage?.defaultCredential(for: space)?.password == "secret",
                    "an accepted .forSession credential is kept as the space's default")

            let cancelling = URLSession(configuration: .ephemeral, delegate: Answers([]), delegateQueue: nil)
            let error = await #expect(throws: URLError.self) { _ = try await cancelling.data(from: server.url("/basic-auth/alice/secret")) }
            #expect(error?.code == .userCancelledAuthentication)
            session.finishTasksAndInvalidate()
            cancelling.finishTasksAndInvalidate()
        }
    }

    @Test("default handling: the storage's default credential, then the URL's user and password; without either, the 401 is the response")
    func defaultHandling() async throws {
        try await withServer { server in
            let configuration = URLSessionConfiguration.ephemeral
            let session = URLSession(configuration: configuration)
            let (_, unanswered) = try await session.data(from: server.url("/basic-auth/bob/pw"))
            #expect((unanswered as? HTTPURLResponse)?.statusCode == 401)

            let port = try #require(server.url("/").port)
            let space = URLProtectionSpace(host: "127.0.0.1", port: port, protocol: "http", realm: "ferry", authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            configuration.urlCredentialStorage?.setDefaultCredential(URLCredential(user: "bob", password: "pw", persistence: .forSession), for: space)
            let (_, stored) = try await session.data(from: server.url("/basic-auth/bob/pw"))
            #expect((stored as? HTTPURLResponse)?.statusCode == 200)

            var inURL = URLComponents(url: server.url("/basic-auth/carol/pw2"), resolvingAgainstBaseURL: false)!
            inURL.user = "carol"
            inURL.password = "pw2"
            let (_, fromURL) = try await URLSession(configuration: .ephemeral).data(from: try #require(inURL.url))
            #expect((fromURL as? HTTPURLResponse)?.statusCode == 200)
            session.finishTasksAndInvalidate()
        }
    }

    @Test("Digest with MD5 and SHA-256, with qop auth and without, answered by the delegate", arguments: [
        ("auth", "MD5"), ("auth", "SHA-256"), ("none", "MD5"),
    ])
    func digest(qop: String, algorithm: String) async throws {
        try await withServer { server in
            let answers = Answers([URLCredential(user: "dee", password: "digestme", persistence: .none)])
            let session = URLSession(configuration: .ephemeral, delegate: answers, delegateQueue: nil)
            let (data, response) = try await session.data(from: server.url("/digest-auth/\(qop)/dee/digestme?algorithm=\(algorithm)"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
            #expect(answers.asked.map(\.method) == [NSURLAuthenticationMethodHTTPDigest])
            #expect(session.configuration.urlCredentialStorage?.allCredentials.isEmpty == true, "a .none credential is not kept")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("the test server's Digest is what curl speaks: curl --digest gets 200 with the password, 401 without")
    func serverAgreesWithCurl() async throws {
        try await withServer { server in
            let url = server.url("/digest-auth/auth/dee/pw").absoluteString
            let right = try await curl(["--digest", "-u", "dee:pw", url])
            let wrong = try await curl(["--digest", "-u", "dee:nope", url])
            #expect(right == "200" && wrong == "401")
        }
    }

    /// curl's status code for `arguments`. Awaited, not waited for on a thread: the test server
    /// answers on Swift's two pool threads, and a blocked one beside another test's left it
    /// none (curl then timed out, "000").
    private func curl(_ arguments: [String]) async throws -> String {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: log) }
        let child = try SpawnedProcess.start(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"] + arguments, log: log)
        defer { child.kill() }
        _ = try await child.exit(within: .seconds(15))
        return child.output
    }
}

/// Answers each challenge with the next credential, and cancels when none is left.
private final class Answers: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    struct Asked {
        var failures: Int
        var method: String
        var realm: String?
        var space: URLProtectionSpace
    }
    private let lock = NSLock()
    private var credentials: [URLCredential]
    private var _asked: [Asked] = []
    var asked: [Asked] { lock.withLock { _asked } }

    init(_ credentials: [URLCredential]) { self.credentials = credentials }

    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        let next: URLCredential? = lock.withLock {
            _asked.append(Asked(failures: challenge.previousFailureCount, method: challenge.protectionSpace.authenticationMethod,
                                realm: challenge.protectionSpace.realm, space: challenge.protectionSpace))
            return credentials.isEmpty ? nil : credentials.removeFirst()
        }
        if let next { completionHandler(.useCredential, next) } else { completionHandler(.cancelAuthenticationChallenge, nil) }
    }
}
