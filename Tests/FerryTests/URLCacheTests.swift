import Ferry
import FerryTestSupport
import Foundation
import Testing

/// URLCache and the request cache policies against the test server's `/cache/<name>`, which
/// counts the full answers and the `304`s it sent.
@Suite("URL cache")
struct URLCacheTests {
    @Test("a fresh entry answers without a request; a stale one with an ETag is revalidated (304) and answered from the cache")
    func freshAndRevalidated() async throws {
        try await withServer { server in
            let session = URLSession(configuration: .ephemeral)
            #expect(try await body(session, server.url("/cache/fresh?maxAge=60")) == "fresh 1")
            #expect(try await body(session, server.url("/cache/fresh?maxAge=60")) == "fresh 1", "answered from the cache")
            #expect(server.cacheCounts("fresh") == (1, 0))

            #expect(try await body(session, server.url("/cache/stale?maxAge=0&etag=v1")) == "stale 1")
            let (data, response) = try await session.data(from: server.url("/cache/stale?maxAge=0&etag=v1"))
            #expect(String(decoding: data, as: UTF8.self) == "stale 1" && (response as? HTTPURLResponse)?.statusCode == 200,
                    "a 304 reaches the app as the cached 200 and body")
            #expect(server.cacheCounts("stale") == (1, 1))
            session.finishTasksAndInvalidate()
        }
    }

    @Test("no-store is never kept; Vary keeps apart requests that differ in the header; reloadIgnoringLocalCacheData goes to the network")
    func whatIsKept() async throws {
        try await withServer { server in
            let session = URLSession(configuration: .ephemeral)
            _ = try await body(session, server.url("/cache/nostore?maxAge=60&noStore=1"))
            #expect(try await body(session, server.url("/cache/nostore?maxAge=60&noStore=1")) == "nostore 2")

            var json = URLRequest(url: server.url("/cache/varied?maxAge=60&vary=Accept"))
            json.setValue("application/json", forHTTPHeaderField: "Accept")
            var text = json
            text.setValue("text/plain", forHTTPHeaderField: "Accept")
            #expect(String(decoding: try await session.data(for: json).0, as: UTF8.self) == "varied 1")
            #expect(String(decoding: try await session.data(for: text).0, as: UTF8.self) == "varied 2", "another Accept: not the entry")
            #expect(String(decoding: try await session.data(for: text).0, as: UTF8.self) == "varied 2")

            var reload = URLRequest(url: server.url("/cache/varied?maxAge=60&vary=Accept"), cachePolicy: .reloadIgnoringLocalCacheData)
            reload.setValue("text/plain", forHTTPHeaderField: "Accept")
            #expect(String(decoding: try await session.data(for: reload).0, as: UTF8.self) == "varied 3")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("returnCacheDataDontLoad: resourceUnavailable with nothing kept, the entry however old once there is one; returnCacheDataElseLoad alike")
    func offlinePolicies() async throws {
        try await withServer { server in
            let configuration = URLSessionConfiguration.ephemeral
            configuration.requestCachePolicy = .returnCacheDataDontLoad
            let offline = URLSession(configuration: configuration)
            let error = await #expect(throws: URLError.self) { _ = try await offline.data(from: server.url("/cache/old?maxAge=0&etag=e")) }
            #expect(error?.code == .resourceUnavailable)

            let online = URLSession(configuration: {
                let c = URLSessionConfiguration.ephemeral
                c.urlCache = configuration.urlCache
                return c
            }())
            _ = try await body(online, server.url("/cache/old?maxAge=0&etag=e"))
            #expect(try await body(offline, server.url("/cache/old?maxAge=0&etag=e")) == "old 1", "stale, yet used: no request")
            let elseLoad = URLRequest(url: server.url("/cache/old?maxAge=0&etag=e"), cachePolicy: .returnCacheDataElseLoad)
            #expect(String(decoding: try await online.data(for: elseLoad).0, as: UTF8.self) == "old 1")
            #expect(server.cacheCounts("old") == (1, 0))
            offline.finishTasksAndInvalidate()
            online.finishTasksAndInvalidate()
        }
    }

    @Test("a cache on disk: a new URLCache on the same folder answers; the files are 0600; past its capacity the oldest go")
    func onDisk() async throws {
        try await withServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-urlcache-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let first = URLSessionConfiguration.ephemeral
            first.urlCache = URLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder)
            _ = try await body(URLSession(configuration: first), server.url("/cache/disk?maxAge=60"))
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(files.count == 1)
            let mode = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(files[0]).path)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600)

            let second = URLSessionConfiguration.ephemeral
            second.urlCache = URLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder)
            #expect(try await body(URLSession(configuration: second), server.url("/cache/disk?maxAge=60")) == "disk 1")
            #expect(server.cacheCounts("disk") == (1, 0))

            let small = URLCache(memoryCapacity: 0, diskCapacity: 4096, directory: folder)
            small.removeAllCachedResponses()
            let tiny = URLSessionConfiguration.ephemeral
            tiny.urlCache = small
            for name in ["a", "b", "c", "d", "e", "f"] { _ = try await body(URLSession(configuration: tiny), server.url("/cache/\(name)?maxAge=60")) }
            #expect(small.currentDiskUsage <= 4096, "\(small.currentDiskUsage) bytes on disk")
        }
    }

    @Test("a newer answer too large for memory replaces the older one kept there; a successful write removes what was kept for its URL")
    func newerAnswersWin() async throws {
        try await withServer { server in
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = URLCache(memoryCapacity: 40_000, diskCapacity: 0)
            let session = URLSession(configuration: configuration)
            let url = server.url("/cache/grow?maxAge=60")
            #expect(try await body(session, url) == "grow 1")
            let cache = try #require(configuration.urlCache)
            let big = HTTPURLResponse(Response(url: url, statusCode: 200, headers: ["Cache-Control": "max-age=60"]))
            cache.storeCachedResponse(CachedURLResponse(response: big, data: Data(repeating: 0x61, count: 10_000)), for: URLRequest(url: url))
            #expect(try await body(session, url) == "grow 2", "the older, smaller answer is not served")

            #expect(try await body(session, server.url("/cache/written?maxAge=60")) == "written 1")
            var put = URLRequest(url: server.url("/cache/written?maxAge=60"))
            put.httpMethod = "PUT"
            let (answer, _) = try await session.upload(for: put, from: Data("new".utf8))
            #expect(String(decoding: answer, as: UTF8.self) == "written 2")
            #expect(try await body(session, server.url("/cache/written?maxAge=60")) == "written 3", "the PUT made the kept answer stale")
            session.finishTasksAndInvalidate()
        }
    }

    @Test("a background session refuses a URL cache: ferryd keeps none")
    func backgroundRefuses() {
        var configuration = Configuration.background(identifier: "cache.refused")
        configuration.urlCache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)
        #expect(configuration.backgroundRefusal?.code == .unsupportedBackgroundConfiguration)
    }

    private func body(_ session: URLSession, _ url: URL) async throws -> String {
        String(decoding: try await session.data(from: url).0, as: UTF8.self)
    }
}
