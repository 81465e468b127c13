import Foundation
import Testing

/// `OPTIONS` answers `204` and a method a path is not routed for answers `405`, both with
/// `Allow`; a path no route matches stays `404`.
@Suite("Allow: OPTIONS and 405")
struct AllowedMethodsTests {
    @Test func optionsAndWrongMethodsCarryAllow() async throws {
        try await TestServer.with { server in
            let options = try await server.request(.OPTIONS, "/3/image", auth: false)
            #expect(options.status == 204)
            #expect(options.header("Allow") == "OPTIONS, POST")

            let wrong = try await server.get("/3/image", auth: false)
            #expect(wrong.status == 405)
            #expect(wrong.header("Allow") == "OPTIONS, POST")
            #expect((wrong.object["error"] as? String)?.contains("GET") == true)

            let put = try await server.request(.PUT, "/3/image/abc", auth: false)
            #expect(put.status == 405)
            #expect(put.header("Allow") == "DELETE, GET, OPTIONS")

            let delete = try await server.request(.DELETE, "/1/files/dropbox/Notes/a.txt")
            #expect(delete.status == 405)
            #expect(delete.header("Allow") == "GET, HEAD, OPTIONS, POST")
            #expect(try await server.request(.OPTIONS, "/1/files_put/dropbox/a.txt").header("Allow") == "OPTIONS, POST, PUT")
            #expect(try await server.request(.PUT, "/bins", auth: false).header("Allow") == "OPTIONS, POST")

            // Nothing routed there: 404, no Allow.
            let nowhere = try await server.request(.OPTIONS, "/nowhere", auth: false)
            #expect(nowhere.status == 404)
            #expect(nowhere.header("Allow") == nil)
            #expect(try await server.request(.DELETE, "/nowhere/at/all", auth: false).status == 404)

            // A bin records every method, OPTIONS included.
            let id = try #require(try await server.request(.POST, "/bins", auth: false).object["id"] as? String)
            #expect(try await server.request(.OPTIONS, "/bins/\(id)/x", auth: false).status == 200)
            let recorded = try #require(try await server.get("/bins/\(id)/requests", auth: false).json as? [[String: Any]])
            #expect(recorded.first?["method"] as? String == "OPTIONS")
        }
    }
}
