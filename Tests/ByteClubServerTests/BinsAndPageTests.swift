import Foundation
import Testing

@Suite("Request bins and the page")
struct BinsAndPageTests {
    @Test func binsRecordEverything() async throws {
        try await TestServer.with { server in
            let created = try await server.request(.POST, "/bins", auth: false)
            #expect(created.status == 201)
            let id = try #require(created.object["id"] as? String)
            #expect(created.object["url"] as? String == "\(server.base)/bins/\(id)")
            let json = Array(#"{"title":"Share","body":"from ShareAlike"}"#.utf8)
            let posted = try await server.request(.POST, "/bins/\(id)?source=ext", headers: [("Content-Type", "application/json"), ("X-Custom", "yes")], body: json, auth: false)
            #expect(posted.status == 200)
            _ = try await server.request(.PUT, "/bins/\(id)/deeper/path", body: [1, 2, 3], auth: false)
            _ = try await server.request(.DELETE, "/bins/\(id)", auth: false)
            let listed = try await server.get("/bins/\(id)/requests", auth: false)
            let requests = try #require(listed.json as? [[String: Any]])
            #expect(requests.map { $0["method"] as? String } == ["DELETE", "PUT", "POST"])
            let post = requests[2]
            #expect(post["path"] as? String == "/bins/\(id)")
            #expect(post["query"] as? String == "source=ext")
            #expect(post["body"] as? String == String(decoding: json, as: UTF8.self))
            #expect((post["headers"] as? [String: String])?["X-Custom"] == "yes")
            #expect(post["remote_addr"] as? String == "127.0.0.1")
            #expect(post["time"] as? String != nil)
            #expect(requests[1]["path"] as? String == "/bins/\(id)/deeper/path")
            #expect(requests[1]["body_bytes"] as? Int == 3)
            let page = try await server.get("/bins/\(id)?inspect", auth: false)
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(page.text.contains("from ShareAlike"))
            #expect(try await server.get("/bins/nosuchbin/requests", auth: false).status == 404)
        }
    }

    @Test func binBodiesAreBounded() async throws {
        try await TestServer.with({ $0.binBodyLimit = 1000 }) { server in
            let id = try #require(try await server.request(.POST, "/bins", auth: false).object["id"] as? String)
            _ = try await server.request(.POST, "/bins/\(id)", body: Bytes.pattern(5000), auth: false)
            let request = try #require((try await server.get("/bins/\(id)/requests", auth: false).json as? [[String: Any]])?.first)
            #expect(request["truncated"] as? Bool == true)
            #expect(request["body_bytes"] as? Int == 5000)
        }
    }

    @Test func pageShowsNotesPhotosAndBins() async throws {
        try await TestServer.with { server in
            _ = try await server.put("/1/files_put/dropbox/Notes/Groceries.txt", Array("milk <and> eggs".utf8))
            _ = try await server.put("/1/files_put/dropbox/Photos/p.png", TestImages.png(width: 20, height: 20))
            _ = try await server.request(.POST, "/bins", auth: false)
            let signedOut = try await server.get("/", auth: false)
            #expect(signedOut.text.contains("Sign in"))
            let page = try await server.get("/", headers: [("Cookie", "byteclub_token=\(server.token)")], auth: false)
            #expect(page.status == 200)
            #expect(page.text.contains("/Notes/Groceries.txt"))
            #expect(page.text.contains("milk &lt;and&gt; eggs"))
            #expect(page.text.contains("/1/thumbnails/dropbox/Photos/p.png?size=m"))
            #expect(page.text.contains("?inspect"))
            let thumb = try await server.get("/1/thumbnails/dropbox/Photos/p.png?size=m", headers: [("Cookie", "byteclub_token=\(server.token)")], auth: false)
            #expect(thumb.status == 200)
        }
    }
}
