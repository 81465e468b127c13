import Ferry
import FerryTestSupport
import Foundation
import Testing

/// The questions about a TLS connection, against Debian's nginx: a server that asks for a
/// client certificate (`ssl_verify_client on`, issued by an authority of the test's) and a
/// server whose certificate no authority vouches for (self-signed), through URLSession's
/// session-level `urlSession(_:didReceive:completionHandler:)` and Ferry's configuration.
@Suite("TLS: client certificates and server trust")
struct TLSChallengeTests {
    @Test("a configuration's client identity (PEM, encrypted PEM, PKCS#12) is presented to a server that asks; without one the server answers 400")
    func configuredIdentity() async throws {
        try await NginxServer.running(mutualTLS: true) { nginx in
            let identity = try #require(nginx.clientIdentity)
            let url = URL(string: try #require(nginx.mutualTLSBaseURL) + "/whoami")!
            let forms: [ClientIdentity] = [
                .pem(certificateChain: identity.certificatePEM, privateKey: identity.keyPEM),
                .pem(certificateChain: identity.certificatePEM, privateKey: identity.encryptedKeyPEM, passphrase: identity.passphrase),
                .pkcs12(file: identity.pkcs12, passphrase: identity.passphrase),
            ]
            for form in forms {
                let configuration = URLSessionConfiguration.ephemeral
                configuration.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]
                configuration.clientIdentity = form
                let session = URLSession(configuration: configuration)
                let (data, response) = try await session.data(from: url)
                #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(form)")
                #expect(String(decoding: data, as: UTF8.self) == identity.subject + "\n", "\(form)")
                session.finishTasksAndInvalidate()
            }
            let without = URLSessionConfiguration.ephemeral
            without.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]
            let session = URLSession(configuration: without)
            let (_, refused) = try await session.data(from: url)
            #expect((refused as? HTTPURLResponse)?.statusCode == 400, "nginx's answer to a client without a certificate")
            session.finishTasksAndInvalidate()

            var wrongPassphrase = Configuration.ephemeral
            wrongPassphrase.additionalTrustedCertificateFiles = without.additionalTrustedCertificateFiles
            wrongPassphrase.clientIdentity = .pkcs12(file: identity.pkcs12, passphrase: "not it")
            let failing = Session(configuration: wrongPassphrase)
            let error = await #expect(throws: FerryError.self) { _ = try await failing.data(for: Request(url: url)) }
            #expect(error?.code == .secureConnectionFailed && error?.message.contains("client identity") == true, "\(String(describing: error))")
            #expect(error?.message.contains("not it") == false, "the passphrase is never shown")
            failing.finishTasksAndInvalidate()
        }
    }

    @Test("a server that ends the connection without a client certificate (openssl s_server -Verify): TLS 1.3 clientCertificateRequired, TLS 1.2 a handshake failure that says so; with one it answers", arguments: ["1.2", "1.3"])
    func strictServer(tls: String) async throws {
        try await NginxServer.running(mutualTLS: true) { nginx in
            let identity = try #require(nginx.clientIdentity)
            let certificate = try #require(nginx.caCertificatePEMPath)
            let key = nginx.prefix.appendingPathComponent("key.pem").path
            let server = try await OpenSSLServer.start(certificate: certificate, key: key, clientAuthority: identity.authorityPEM, tls: tls)
            defer { server.stop() }
            let url = URL(string: "https://127.0.0.1:\(server.port)/")!
            var without = Configuration.ephemeral
            without.additionalTrustedCertificateFiles = [certificate]
            let refused = Session(configuration: without)
            let error = await #expect(throws: FerryError.self) { _ = try await refused.data(for: Request(url: url)) }
            if tls == "1.3" {
                #expect(error?.code == .clientCertificateRequired, "TLS 1.3 names it: \(String(describing: error))")
            } else {
                // TLS 1.2's handshake_failure also means no cipher in common: the message says both.
                #expect(error?.code == .secureConnectionFailed && error?.message.contains("client certificate") == true, "\(String(describing: error))")
            }
            refused.finishTasksAndInvalidate()

            var with = without
            with.clientIdentity = .pkcs12(file: identity.pkcs12, passphrase: identity.passphrase)
            let accepted = Session(configuration: with)
            let (_, response) = try await accepted.data(for: Request(url: url))
            #expect(response.statusCode == 200, "TLS \(tls)")
            accepted.finishTasksAndInvalidate()
        }
    }

    @Test("the session's delegate is asked once per host when the server asks for a certificate; its identity is presented; cancel fails the task")
    func delegateGivesIdentity() async throws {
        try await NginxServer.running(mutualTLS: true) { nginx in
            let identity = try #require(nginx.clientIdentity)
            let base = try #require(nginx.mutualTLSBaseURL)
            let configuration = URLSessionConfiguration.ephemeral
            configuration.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]
            let delegate = ConnectionQuestions { challenge in
                challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodClientCertificate
                    ? (.useCredential, URLCredential(identity: .pkcs12(file: identity.pkcs12, passphrase: identity.passphrase), certificates: nil, persistence: .forSession))
                    : (.performDefaultHandling, nil)
            }
            let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
            for path in ["/a", "/b", "/c"] {
                let (data, response) = try await session.data(from: URL(string: base + path)!)
                #expect((response as? HTTPURLResponse)?.statusCode == 200 && String(decoding: data, as: UTF8.self) == identity.subject + "\n")
            }
            let asked = delegate.asked.filter { $0.method == NSURLAuthenticationMethodClientCertificate }
            #expect(asked.count == 1, "once for the host: \(delegate.asked)")
            #expect(asked.first?.host == "127.0.0.1" && asked.first?.port == nginx.mutualTLSPort)
            // The plain TLS port does not ask: no client-certificate question for it.
            let plain = try #require(nginx.httpsBaseURL)
            try Data("x".utf8).write(to: nginx.root.appendingPathComponent("x.txt"))
            _ = try await session.data(from: URL(string: plain + "/x.txt")!)
            #expect(delegate.asked.filter { $0.method == NSURLAuthenticationMethodClientCertificate }.count == 1, "\(delegate.asked)")
            session.finishTasksAndInvalidate()

            let cancelling = URLSession(
                configuration: configuration,
                delegate: ConnectionQuestions { challenge in
                    challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodClientCertificate
                        ? (.cancelAuthenticationChallenge, nil) : (.performDefaultHandling, nil)
                }, delegateQueue: nil)
            let error = await #expect(throws: URLError.self) { _ = try await cancelling.data(from: URL(string: base + "/d")!) }
            #expect(error?.code == .cancelled, "URLSession's code for a cancelled challenge: \(String(describing: error))")
            cancelling.finishTasksAndInvalidate()
        }
    }

    @Test("server trust: the challenge shows the chain and the standard verdict; trusting it gets through a self-signed server, default handling does not")
    func trustingTheServer() async throws {
        try await NginxServer.running(tls: true) { nginx in
            try Data("trusted".utf8).write(to: nginx.root.appendingPathComponent("t.txt"))
            let url = URL(string: try #require(nginx.httpsBaseURL) + "/t.txt")!
            let certificate = try Self.derOfPEM(try #require(nginx.caCertificatePEMPath))

            let trusting = ConnectionQuestions { challenge in
                guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
                    let trust = challenge.protectionSpace.serverTrust
                else { return (.performDefaultHandling, nil) }
                return (.useCredential, URLCredential(trust: trust))
            }
            let session = URLSession(configuration: .ephemeral, delegate: trusting, delegateQueue: nil)
            for _ in 0..<3 {
                let (data, response) = try await session.data(from: url)
                #expect((response as? HTTPURLResponse)?.statusCode == 200 && String(decoding: data, as: UTF8.self) == "trusted")
            }
            let asked = trusting.asked.filter { $0.method == NSURLAuthenticationMethodServerTrust }
            #expect(asked.count == 1, "once per host and session: \(trusting.asked)")
            let trust = try #require(asked.first?.trust)
            #expect(!trust.isTrustedByDefault && trust.defaultFailure != nil, "self-signed: not trusted by the standard rules")
            #expect(trust.certificates == [certificate], "the chain as the server sent it")
            #expect(trust.host == "127.0.0.1" && trust.port == nginx.httpsPort)
            session.finishTasksAndInvalidate()

            let standard = URLSession(
                configuration: .ephemeral, delegate: ConnectionQuestions { _ in (.performDefaultHandling, nil) }, delegateQueue: nil)
            let error = await #expect(throws: URLError.self) { _ = try await standard.data(from: url) }
            #expect(error?.code == .serverCertificateUntrusted, "\(String(describing: error))")
            standard.finishTasksAndInvalidate()
        }
    }

    @Test("pinning: the right public-key pin is accepted (with the authority trusted), a wrong one refuses every task to the host")
    func pinning() async throws {
        try await NginxServer.running(tls: true) { nginx in
            try Data("pinned".utf8).write(to: nginx.root.appendingPathComponent("p.txt"))
            let url = URL(string: try #require(nginx.httpsBaseURL) + "/p.txt")!
            let pin = try Self.publicKeyPin(ofPEM: try #require(nginx.caCertificatePEMPath))
            let configuration = URLSessionConfiguration.ephemeral
            configuration.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]

            for (expected, accepts) in [(pin, true), ("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", false)] {
                let pinning = ConnectionQuestions { challenge in
                    guard let trust = challenge.protectionSpace.serverTrust else { return (.performDefaultHandling, nil) }
                    return trust.isTrustedByDefault && trust.publicKeySHA256.contains(expected)
                        ? (.performDefaultHandling, nil) : (.cancelAuthenticationChallenge, nil)
                }
                let session = URLSession(configuration: configuration, delegate: pinning, delegateQueue: nil)
                if accepts {
                    let (data, _) = try await session.data(from: url)
                    #expect(String(decoding: data, as: UTF8.self) == "pinned")
                    #expect(pinning.asked.first?.trust?.isTrustedByDefault == true, "the authority is trusted: the standard rules pass")
                } else {
                    let requestsBefore = nginx.accessLog().filter { $0.contains("/p.txt") }.count
                    for _ in 0..<2 {
                        let error = await #expect(throws: URLError.self) { _ = try await session.data(from: url) }
                        #expect(error?.code == .cancelled, "URLSession's code for a refused challenge: \(String(describing: error))")
                    }
                    #expect(pinning.asked.count == 1, "a refusal stands for the session: \(pinning.asked)")
                    #expect(nginx.accessLog().filter { $0.contains("/p.txt") }.count == requestsBefore,
                            "no request reached the server after the refusal: \(nginx.accessLog())")
                }
                session.finishTasksAndInvalidate()
            }
        }
    }

    @Test("without the session-level method, server trust goes to the task's; a password answer to every challenge trusts no server")
    func taskLevelServerTrust() async throws {
        try await NginxServer.running(tls: true) { nginx in
            try Data("task".utf8).write(to: nginx.root.appendingPathComponent("t.txt"))
            let url = URL(string: try #require(nginx.httpsBaseURL) + "/t.txt")!
            let trusting = TaskQuestions { challenge in
                challenge.protectionSpace.serverTrust.map { (.useCredential, URLCredential(trust: $0)) } ?? (.performDefaultHandling, nil)
            }
            let session = URLSession(configuration: .ephemeral, delegate: trusting, delegateQueue: nil)
            let (data, _) = try await session.data(from: url)
            #expect(String(decoding: data, as: UTF8.self) == "task")
            #expect(trusting.asked.map(\.method) == [NSURLAuthenticationMethodServerTrust], "\(trusting.asked)")
            session.finishTasksAndInvalidate()

            let passwords = TaskQuestions { _ in (.useCredential, URLCredential(user: "u", password: "p", persistence: .none)) }
            let other = URLSession(configuration: .ephemeral, delegate: passwords, delegateQueue: nil)
            let error = await #expect(throws: URLError.self) { _ = try await other.data(from: url) }
            #expect(error?.code == .serverCertificateUntrusted, "\(String(describing: error))")
            other.finishTasksAndInvalidate()
        }
    }

    @Test("a delegate that judges trust, and a host nobody answers on: the task fails with cannotConnectToHost, the delegate is not asked")
    func unreachableHost() async throws {
        let judging = ConnectionQuestions { _ in (.performDefaultHandling, nil) }
        let session = URLSession(configuration: .ephemeral, delegate: judging, delegateQueue: nil)
        let error = await #expect(throws: URLError.self) { _ = try await session.data(from: URL(string: "https://127.0.0.1:9/")!) }
        #expect(error?.code == .cannotConnectToHost, "\(String(describing: error))")
        #expect(judging.asked.isEmpty, "\(judging.asked)")
        session.finishTasksAndInvalidate()
    }

    /// The DER bytes of the first certificate in a PEM file.
    static func derOfPEM(_ path: String) throws -> Data {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let body = text.components(separatedBy: "-----")[2].filter { !$0.isWhitespace }
        return try #require(Data(base64Encoded: body))
    }

    /// The base64 SHA-256 of a PEM certificate's public key, as openssl computes it.
    static func publicKeyPin(ofPEM path: String) throws -> String {
        let folder = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let spki = folder.appendingPathComponent("spki.der")
        let shell = "openssl x509 -in '\(path)' -pubkey -noout | openssl pkey -pubin -outform DER -out '\(spki.path)'"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", shell]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "openssl made the public key: \(shell)")
        return TestFiles.sha256Base64(of: try Data(contentsOf: spki))
    }

    @Test("a session with a delegate keeps one connection to an HTTPS host for its requests (each used to get a TLS configuration of its own, so a connection pool of its own)")
    func oneConnectionPerHost() async throws {
        try await NginxServer.running(tls: true) { nginx in
            try Data("again".utf8).write(to: nginx.root.appendingPathComponent("again.txt"))
            let configuration = URLSessionConfiguration.ephemeral
            configuration.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]
            configuration.urlCache = nil  // every request goes to nginx
            // Any delegate: its challenge methods are asked through the client-certificate callback.
            let session = URLSession(configuration: configuration, delegate: TaskQuestions { _ in (.performDefaultHandling, nil) }, delegateQueue: nil)
            let url = URL(string: try #require(nginx.httpsBaseURL) + "/again.txt")!
            for _ in 0..<4 {
                let (data, response) = try await session.data(from: url)
                #expect((response as? HTTPURLResponse)?.statusCode == 200 && data == Data("again".utf8))
            }
            session.finishTasksAndInvalidate()
            // nginx logs a request after answering it: the last line may come a moment later.
            let connections = try await eventually("nginx logged the four requests", timeout: .seconds(5), observed: "\(nginx.connectionLog())") {
                let logged = nginx.connectionLog().filter { $0.request.hasPrefix("GET /again.txt") }.map(\.connection)
                return logged.count >= 4 ? logged : nil
            }
            #expect(connections.count == 4)
            #expect(Set(connections).count == 1, "the four requests came on connections \(connections)")
        }
    }
}

/// Answers the challenges its subclass's delegate method receives with `answer`, recording
/// each one asked.
class ChallengeAnswers: NSObject, @unchecked Sendable {  // `_asked` behind `lock`
    struct Asked: Sendable {
        var method: String
        var host: String
        var port: Int
        var trust: ServerTrust?
    }
    private let lock = NSLock()
    private var _asked: [Asked] = []
    private let answer: @Sendable (URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?)
    var asked: [Asked] { lock.withLock { _asked } }

    init(_ answer: @escaping @Sendable (URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?)) {
        self.answer = answer
    }

    func respond(to challenge: URLAuthenticationChallenge, _ completionHandler: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        let space = challenge.protectionSpace
        lock.withLock { _asked.append(Asked(method: space.authenticationMethod, host: space.host, port: space.port, trust: space.serverTrust)) }
        let (disposition, credential) = answer(challenge)
        completionHandler(disposition, credential)
    }
}

/// A URLSession delegate answering the session-level questions.
final class ConnectionQuestions: ChallengeAnswers, URLSessionDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        respond(to: challenge, completionHandler)
    }
}

/// A URLSession task delegate with no session-level method: every challenge comes to the task's.
final class TaskQuestions: ChallengeAnswers, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        respond(to: challenge, completionHandler)
    }
}
