import Ferry
import FerryTestSupport
import Foundation
import Testing

/// A server with a private certificate authority, reached by a background session: ferryd
/// trusts the authority the session's configuration names, for that session only.
@Suite("Background sessions and private certificate authorities", .serialized)
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
            session.finishTasksAndInvalidate()

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
}
