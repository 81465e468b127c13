import Foundation
import Testing

@Suite("Errors, path escapes, auth, quota")
struct ErrorTests {
    @Test func pathEscapesAreRefused() async throws {
        try await TestServer.with { server in
            _ = try await server.put("/1/files_put/dropbox/safe.txt", [1])
            let longName = String(repeating: "a", count: 300)
            let attempts = [
                "/1/files/dropbox/a/../../etc/passwd",
                "/1/files/dropbox/..",
                "/1/files/dropbox/a/%2E%2E/%2E%2E/etc/passwd",
                "/1/files/dropbox/a%2F..%2F..%2Fetc%2Fpasswd",
                "/1/files/dropbox/a%00b.txt",
                "/1/files/dropbox/\(longName).txt",
                "/1/files_put/dropbox/../outside.txt",
                "/1/files/dropbox/a%5Cb",
            ]
            for path in attempts {
                // A raw socket, so that no client library normalises the path first.
                let connection = try RawHTTP(port: server.port)
                let method = path.contains("files_put") ? "PUT" : "GET"
                try await connection.head(method, path, [("Authorization", "Bearer \(server.token)"), ("Content-Length", "1"), ("Connection", "close")])
                try await connection.send([0x41])
                let response = try await connection.readResponse()
                #expect(response.status == 400, "\(path) → \(response.status)")
                #expect(response.text.contains("\"error\""), "\(path): \(response.text)")
            }
            // Nothing landed outside the data directory's blobs, and the tree is unchanged.
            let root = try await server.get("/1/metadata/dropbox/")
            #expect((root.object["contents"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == ["/safe.txt"])
            let bad = try await server.post("/1/fileops/create_folder", form: ["root": "dropbox", "path": "/x/../../y"])
            #expect(bad.status == 400)
            let badRoot = try await server.get("/1/metadata/elsewhere/x")
            #expect(badRoot.status == 400)
            #expect((badRoot.object["error"] as? String)?.contains("'root'") == true)
        }
    }

    @Test func authenticationAndApps() async throws {
        try await TestServer.with { server in
            let none = try await server.get("/1/metadata/dropbox/", auth: false)
            #expect(none.status == 401)
            #expect(none.object["error"] as? String != nil)
            let wrong = try await server.get("/1/metadata/dropbox/", headers: [("Authorization", "Bearer nope")], auth: false)
            #expect(wrong.status == 401)
            let oauth = "OAuth oauth_version=\"1.0\", oauth_signature_method=\"PLAINTEXT\", oauth_consumer_key=\"\(server.appKey)\", oauth_token=\"\(server.token)\", oauth_signature=\"x&y\""
            #expect(try await server.get("/1/metadata/dropbox/", headers: [("Authorization", oauth)], auth: false).status == 200)
            let otherApp = oauth.replacingOccurrences(of: server.appKey, with: "someone-else")
            let forbidden = try await server.get("/1/metadata/dropbox/", headers: [("Authorization", otherApp)], auth: false)
            #expect(forbidden.status == 403)
            #expect(try await server.get("/1/metadata/dropbox/?access_token=\(server.token)", auth: false).status == 200)
            let unknown = try await server.get("/1/nothing-here")
            #expect(unknown.status == 404)
            #expect(unknown.object["error"] as? String != nil)
        }
    }

    @Test func quotaGives507AndKeepsNothing() async throws {
        try await TestServer.with({ $0.quotaBytes = 100_000 }) { server in
            #expect(try await server.put("/1/files_put/dropbox/a.bin", Bytes.pattern(60_000)).status == 200)
            let over = try await server.put("/1/files_put/dropbox/b.bin", Bytes.pattern(60_000))
            #expect(over.status == 507)
            #expect((over.object["error"] as? String)?.lowercased().contains("quota") == true)
            #expect(try await server.get("/1/metadata/dropbox/b.bin").status == 404)
            // Overwriting within the quota is fine: the old version's bytes are given back.
            #expect(try await server.put("/1/files_put/dropbox/a.bin", Bytes.pattern(90_000)).status == 200)
            // A streamed body without Content-Length is stopped at the quota too.
            let connection = try RawHTTP(port: server.port)
            try await connection.head("PUT", "/1/files_put/dropbox/c.bin", [("Authorization", "Bearer \(server.token)"), ("Transfer-Encoding", "chunked")])
            let chunk = Bytes.pattern(50_000)
            try await connection.send(String(chunk.count, radix: 16) + "\r\n")
            try await connection.send(chunk + Array("\r\n0\r\n\r\n".utf8))
            let response = try await connection.readResponse()
            #expect(response.status == 507)
            let tmp = TestServer.tempFiles(server.dataDirectory)
            #expect(tmp.isEmpty)
        }
    }

    @Test func bodyLimitGives413() async throws {
        try await TestServer.with({ $0.maxBodyBytes = 10_000 }) { server in
            let big = try await server.put("/1/files_put/dropbox/big.bin", Bytes.pattern(20_000))
            #expect(big.status == 413)
            #expect(big.object["error"] as? String != nil)
        }
    }
}
