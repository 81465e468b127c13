import Ferry
import FerryTestSupport
import Foundation
import Testing

/// A background session's configuration, carried to ferryd: a server with a private
/// certificate authority (trusted for that session only), a client certificate, HTTP/2 or not,
/// resumable uploads or not, a proxy.
@Suite("Background sessions carry their configuration", .serialized)
struct BackgroundTrustTests {
    @Test("additionalTrustedCertificateFiles reach ferryd: the HTTPS download completes; a session without them gets serverCertificateUntrusted")
    func privateAuthority() async throws {
        let nginx = try await NginxServer.start(tls: true)
        let daemon = try await DaemonHarness.start()
        defer { daemon.stop() }
        do {
            let content = Data(TestContent.bytes(count: 200_000, seed: 81))
            try content.write(to: nginx.root.appendingPathComponent("private.bin"))
            let url = URL(string: try #require(nginx.httpsBaseURL) + "/private.bin")!
            let kept = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-trust-\(UUID().uuidString.prefix(8)).bin")
            defer { try? FileManager.default.removeItem(at: kept) }

            var trusting = daemon.configuration("bg.trusting")
            trusting.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]
            let delegate = RecordingDelegate()
            delegate.keepCopyOfDownloadAt = kept
            let session = try Session.background(trusting, delegate: delegate)
            session.downloadTask(with: Request(url: url)).resume()
            let completion = await delegate.nextCompletion()
            #expect(succeeded(completion), "\(String(describing: completion))")
            #expect(try Data(contentsOf: kept) == content)
            #expect(nginx.accessLog().contains { $0.hasPrefix("GET /private.bin HTTP/2.0 200") }, "HTTP/2 offered: \(nginx.accessLog())")
            session.finishTasksAndInvalidate()

            var http1 = daemon.configuration("bg.http1")
            http1.additionalTrustedCertificateFiles = trusting.additionalTrustedCertificateFiles
            http1.allowsHTTP2 = false
            let http1Delegate = RecordingDelegate()
            let http1Session = try Session.background(http1, delegate: http1Delegate)
            http1Session.downloadTask(with: Request(url: URL(string: url.absoluteString + "?http1")!)).resume()
            #expect(succeeded(await http1Delegate.nextCompletion()))
            #expect(nginx.accessLog().contains { $0.hasPrefix("GET /private.bin?http1 HTTP/1.1 200") }, "allowsHTTP2 = false: \(nginx.accessLog())")
            http1Session.finishTasksAndInvalidate()

            let other = RecordingDelegate()
            let untrusting = try Session.background(daemon.configuration("bg.untrusting"), delegate: other)
            untrusting.downloadTask(with: Request(url: url)).resume()
            let refused = await other.nextCompletion()
            #expect(refused??.code == .serverCertificateUntrusted, "the other session does not trust it: \(String(describing: refused))")
            untrusting.finishTasksAndInvalidate()
            try await nginx.stop()
        } catch {
            try? await nginx.stop()
            throw error
        }
    }

    @Test("clientIdentity reaches ferryd: a server that asks for a certificate answers with its subject; a session without one gets the server's 400")
    func clientIdentity() async throws {
        try await NginxServer.running(mutualTLS: true) { nginx in
            let daemon = try await DaemonHarness.start()
            defer { daemon.stop() }
            let identity = try #require(nginx.clientIdentity)
            let url = URL(string: try #require(nginx.mutualTLSBaseURL) + "/whoami")!
            for (name, presented) in [("bg.identity", ClientIdentity.pkcs12(file: identity.pkcs12, passphrase: identity.passphrase)), ("bg.anonymous", nil)] {
                var configuration = daemon.configuration(name)
                configuration.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]
                configuration.clientIdentity = presented
                let delegate = RecordingDelegate()
                let session = try Session.background(configuration, delegate: delegate)
                session.dataTask(with: Request(url: url)).resume()
                #expect(succeeded(await delegate.nextCompletion()), "\(name)")
                if presented != nil {
                    #expect(String(decoding: delegate.data, as: UTF8.self) == identity.subject + "\n", "\(name): \(delegate.log)")
                } else {
                    #expect(delegate.log.contains("response 400"), "\(name): nginx's 400 without a certificate: \(delegate.log)")
                }
                session.finishTasksAndInvalidate()
            }
        }
    }

    @Test("urlCredentialStorage reaches ferryd with each task: a 401 is answered with the storage's credential for the realm, never listed; without one the 401 is the response")
    func credentials() async throws {
        try await withDaemonAndServer { daemon, server in
            let url = server.url("/basic-auth/alice/s3cret-pw")
            let storage = URLCredentialStorage()
            let space = URLProtectionSpace(
                host: try #require(url.host), port: try #require(url.port), protocol: "http", realm: "ferry",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            storage.setDefaultCredential(URLCredential(user: "alice", password: "s3cret-pw", persistence: .forSession), for: space)
            var configuration = daemon.configuration("bg.auth")
            configuration.urlCredentialStorage = storage
            let delegate = RecordingDelegate()
            let session = try Session.background(configuration, delegate: delegate)
            session.dataTask(with: Request(url: url)).resume()
            #expect(succeeded(await delegate.nextCompletion()))
            #expect(delegate.log.contains("response 200") && String(decoding: delegate.data, as: UTF8.self) == "authenticated alice", "\(delegate.log)")
            let listed = try await runFerry(["list", "--json", "--session", "bg.auth"], environment: daemon.environment)
            #expect(listed.status == 0 && listed.output.contains("basic-auth"), "\(listed.output)")
            // (The test server takes the password in the path; the listing has no credential field.)
            #expect(!listed.output.contains("\"credentials\"") && !listed.output.contains("password"), "the credential is not listed: \(listed.output)")
            session.finishTasksAndInvalidate()

            // A redirect to another host (here another port) never gets them: its 401 is the answer.
            let elsewhere = try await TestHTTPServer.start()
            let away = server.url("/redirect-absolute?to=" + (elsewhere.baseURL + "/basic-auth/alice/s3cret-pw").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            let sameHost = server.url("/redirect/1?to=/basic-auth/alice/s3cret-pw")
            let redirected = RecordingDelegate()
            var redirecting = daemon.configuration("bg.auth.redirects")
            redirecting.urlCredentialStorage = storage
            let again = try Session.background(redirecting, delegate: redirected)
            again.dataTask(with: Request(url: away)).resume()
            #expect(succeeded(await redirected.nextCompletion()))
            #expect(redirected.log.contains("response 401"), "the other host asked and got nothing: \(redirected.log)")
            again.dataTask(with: Request(url: sameHost)).resume()
            #expect(succeeded(await redirected.nextCompletion()))
            #expect(redirected.log.contains("response 200"), "the same host after a redirect: \(redirected.log)")
            again.finishTasksAndInvalidate()
            try await elsewhere.shutdown()

            var without = daemon.configuration("bg.nocredentials")
            without.urlCredentialStorage = URLCredentialStorage()
            let other = RecordingDelegate()
            let plain = try Session.background(without, delegate: other)
            plain.dataTask(with: Request(url: url)).resume()
            #expect(succeeded(await other.nextCompletion()))
            #expect(other.log.contains("response 401"), "\(other.log)")
            plain.finishTasksAndInvalidate()
        }
    }

    @Test("resumableUploads = .disabled reaches ferryd: a 2 MiB upload to a server that speaks the protocol is one plain PUT")
    func plainUploads() async throws {
        let server = try await ResumableUploadServer.start()
        let daemon = try await DaemonHarness.start()
        defer { daemon.stop() }
        do {
            let body = Data(TestContent.bytes(count: 2 << 20, seed: 82))
            for (identifier, mode) in [("bg.plain", ResumableUploadMode.disabled), ("bg.resumable", .automatic)] {
                var configuration = daemon.configuration(identifier)
                configuration.resumableUploads = mode
                let delegate = RecordingDelegate()
                let session = try Session.background(configuration, delegate: delegate)
                session.uploadTask(with: Request(url: URL(string: server.baseURL + "/upload/\(identifier)")!, method: "PUT"), from: body).resume()
                #expect(succeeded(await delegate.nextCompletion()))
                #expect(server.completedUploads[identifier]?.sha256 == TestContent.sha256Hex(count: 2 << 20, seed: 82))
                session.finishTasksAndInvalidate()
            }
            let spoken = { (name: String) in
                server.requests.filter { $0.path == "/upload/" + name }.contains { $0.headers.contains { $0.0.lowercased() == "upload-draft-interop-version" } }
            }
            #expect(!spoken("bg.plain"), "disabled, yet it was spoken: \(server.requests.map { "\($0.method) \($0.uri)" })")
            #expect(spoken("bg.resumable"), "automatic: the protocol was used")
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    @Test("proxies reach ferryd: a background download goes through tinyproxy (CONNECT in its log)")
    func proxies() async throws {
        try await withDaemonAndServer { daemon, server in
            let proxy = try await TinyproxyServer.start()
            defer { proxy.stop() }
            var configuration = daemon.configuration("bg.proxied")
            configuration.proxies = ProxySettings(http: .init(host: "127.0.0.1", port: proxy.port))
            let delegate = RecordingDelegate()
            let session = try Session.background(configuration, delegate: delegate)
            session.downloadTask(with: server.url("/bytes/20000?seed=3")).resume()
            #expect(succeeded(await delegate.nextCompletion()))
            let port = try #require(server.url("/").port)
            #expect(proxy.log().contains("CONNECT 127.0.0.1:\(port)"), "\(proxy.log().suffix(800))")
            session.finishTasksAndInvalidate()
        }
    }
}
