import Ferry
import FerryEngine
import FerryTestSupport
import Foundation
import Testing

/// Against Debian's nginx: a server we did not write.
@Suite("Against nginx")
struct NginxTests {
    func withNginx<T>(tls: Bool = false, _ body: (NginxServer) async throws -> T) async throws -> T {
        try await NginxServer.running(tls: tls, body)
    }

    @Test("a static file downloads byte-exact")
    func download() async throws {
        try await withNginx { nginx in
            let size = 8 << 20
            try Data(TestContent.bytes(count: size, seed: 70)).write(to: nginx.root.appendingPathComponent("big.bin"))
            let (file, response) = try await Session.shared.download(for: Request(url: URL(string: nginx.baseURL + "/big.bin")!))
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(response.statusCode == 200)
            #expect(response.acceptsByteRanges)
            #expect(try sha256Hex(ofFile: file) == TestContent.sha256Hex(count: size, seed: 70))
        }
    }

    @Test("a gzip-coded answer arrives decoded for data tasks (URLSession's spelling too); a download asks for the bytes as they are")
    func contentCoding() async throws {
        try await withNginx { nginx in
            // A name of this run's: the shared session's cache is on disk, and an entry left by an
            // earlier run whose nginx had the same port would be revalidated.
            let name = "notes-\(UUID().uuidString).txt"
            let folder = nginx.root.appendingPathComponent("gzip")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let text = String(repeating: "Byte Club notes, shared by every member of the club.\n", count: 4000)
            try Data(text.utf8).write(to: folder.appendingPathComponent(name))
            let url = URL(string: nginx.baseURL + "/gzip/" + name)!

            let (data, response) = try await Session.shared.data(for: Request(url: url))
            #expect(response.headers["Content-Encoding"] == "gzip", "nginx coded it")
            #expect(String(decoding: data, as: UTF8.self) == text, "decoded, whole")
            // nginx's access log: `$request $status "$http_range" "$http_if_range" $bytes_sent`.
            let log = try String(contentsOf: nginx.prefix.appendingPathComponent("logs/access.log"), encoding: .utf8)
            let sent = log.split(separator: "\n").first { $0.hasPrefix("GET /gzip/\(name)") }.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) }
            #expect((sent ?? .max) < text.utf8.count / 10, "far fewer bytes went over the wire (\(sent ?? -1) of \(text.utf8.count))")

            let (spelled, _) = try await URLSession.shared.data(from: url)
            #expect(spelled.count == text.utf8.count)

            let (file, downloaded) = try await Session.shared.download(for: Request(url: url))
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(downloaded.headers["Content-Encoding"] == nil, "a download asked for identity")
            #expect(try Data(contentsOf: file) == Data(text.utf8))
        }
    }

    @Test("a cache's revalidation asks for coding too: a 304 keeps the stored body, a changed file comes gzip-coded and decoded")
    func revalidationIsCoded() async throws {
        try await withNginx { nginx in
            let folder = nginx.root.appendingPathComponent("gzip")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let file = folder.appendingPathComponent("minutes.txt")
            let first = String(repeating: "Minutes of the club's first meeting.\n", count: 2000)
            let second = String(repeating: "Minutes of the club's second meeting, longer.\n", count: 2000)
            try Data(first.utf8).write(to: file)
            var configuration = Configuration.ephemeral
            configuration.urlCache = URLCache(memoryCapacity: 16 << 20, diskCapacity: 0)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            // Revalidated every time: nginx's answer has validators and no lifetime of its own.
            var request = Request(url: URL(string: nginx.baseURL + "/gzip/minutes.txt")!)
            request.cacheUse = .reloadRevalidatingCacheData

            let (stored, _) = try await session.data(for: request)
            #expect(String(decoding: stored, as: UTF8.self) == first)
            let (again, notModified) = try await session.data(for: request)
            #expect(String(decoding: again, as: UTF8.self) == first, "the stored body, decoded")
            #expect(notModified.statusCode == 200, "a 304 is answered with the stored response")

            try Data(second.utf8).write(to: file)
            let (changed, response) = try await session.data(for: request)
            #expect(String(decoding: changed, as: UTF8.self) == second, "the changed file, decoded")
            #expect(response.headers["Content-Encoding"] == "gzip")
            // nginx's access log: `$request $status "$http_range" "$http_if_range" $bytes_sent`.
            let lines = nginx.accessLog().filter { $0.hasPrefix("GET /gzip/minutes.txt") }
            #expect(lines.map { $0.split(separator: " ")[3] } == ["200", "304", "200"], "\(lines)")
            let sent = lines.last.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) }
            #expect((sent ?? .max) < second.utf8.count / 10, "the changed file went over the wire coded (\(sent ?? -1) of \(second.utf8.count) bytes)")
        }
    }

    @Test("resume data made against nginx continues with Range and If-Range; a stale validator restarts whole")
    func resumeAgainstNginx() async throws {
        try await withNginx { nginx in
            let size = 4 << 20
            let content = Data(TestContent.bytes(count: size, seed: 71))
            try content.write(to: nginx.root.appendingPathComponent("r.bin"))
            let url = URL(string: nginx.baseURL + "/r.bin")!
            let engine = try TransferEngine(configuration: EngineConfiguration())
            defer { Task { try? await engine.shutdown() } }
            let head = try await engine.run(Transfer(request: Request(url: url, method: "HEAD")))
            let etag = try #require(head.response.etag)

            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let partial = dir.appendingPathComponent("r.bin")
            try content.prefix(1_500_000).write(to: partial)
            let resumed = try await engine.run(Transfer(request: Request(url: url), destination: .file(partial, resume: ResumePoint(offset: 1_500_000, validator: etag))))
            #expect(resumed.response.statusCode == 206)
            #expect(try sha256Hex(ofFile: partial) == TestContent.sha256Hex(count: size, seed: 71))
            #expect(nginx.accessLog().contains { $0.contains(" 206 ") && $0.contains("bytes=1500000-") && $0.contains(etag.replacingOccurrences(of: "\"", with: "")) })

            // The file changed on the server (different ETag): If-Range fails, nginx sends it whole.
            let stale = dir.appendingPathComponent("stale.bin")
            try Data(repeating: 0xAA, count: 1_000_000).write(to: stale)
            let restarted = try await engine.run(Transfer(request: Request(url: url), destination: .file(stale, resume: ResumePoint(offset: 1_000_000, validator: "\"0-0\""))))
            #expect(restarted.response.statusCode == 200)
            #expect(try sha256Hex(ofFile: stale) == TestContent.sha256Hex(count: size, seed: 71))
        }
    }

    @Test("a PUT upload lands byte-exact in nginx's WebDAV directory")
    func putUpload() async throws {
        try await withNginx { nginx in
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("photo.bin")
            let size = 6 << 20
            try Data(TestContent.bytes(count: size, seed: 72)).write(to: file)
            let (_, response) = try await Session.shared.upload(
                for: Request(url: URL(string: nginx.baseURL + "/upload/photo.bin")!, method: "PUT"), fromFile: file)
            #expect(response.statusCode == 201 || response.statusCode == 204)
            #expect(try sha256Hex(ofFile: nginx.uploadDirectory.appendingPathComponent("photo.bin")) == TestContent.sha256Hex(count: size, seed: 72))
        }
    }

    @Test("HTTPS with HTTP/2 when the CA is trusted; an untrusted certificate is refused")
    func httpsAndHTTP2() async throws {
        try await withNginx(tls: true) { nginx in
            try Data(TestContent.bytes(count: 100_000, seed: 73)).write(to: nginx.root.appendingPathComponent("s.bin"))
            let url = URL(string: try #require(nginx.httpsBaseURL) + "/s.bin")!

            var trusting = Configuration.ephemeral
            trusting.additionalTrustedCertificateFiles = [try #require(nginx.caCertificatePEMPath)]
            let session = Session(configuration: trusting)
            let (data, response) = try await session.data(for: Request(url: url))
            #expect(response.httpVersion == "HTTP/2")
            #expect(data == Data(TestContent.bytes(count: 100_000, seed: 73)))
            session.finishTasksAndInvalidate()

            // A configuration of its own: a copy of `trusting` would share its memory cache,
            // which may answer the same URL with the stored HTTP/2 response.
            var http1 = Configuration.ephemeral
            http1.additionalTrustedCertificateFiles = trusting.additionalTrustedCertificateFiles
            http1.allowsHTTP2 = false
            let http1Session = Session(configuration: http1)
            let (_, http1Response) = try await http1Session.data(for: Request(url: url))
            #expect(http1Response.httpVersion == "HTTP/1.1")
            http1Session.finishTasksAndInvalidate()

            do {
                _ = try await Session.shared.data(for: Request(url: url))
                Issue.record("an untrusted certificate was accepted")
            } catch let error as FerryError {
                #expect(error.code == .serverCertificateUntrusted, "\(error)")
            }
        }
    }
}
