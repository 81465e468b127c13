import Foundation
import Testing

@Suite("Images API (Imgur v3 shape)")
struct ImagesAPITests {
    func multipart(_ image: [UInt8], title: String) -> (String, [UInt8]) {
        let boundary = "----bc\(UUID().uuidString.prefix(6))"
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"image\"; filename=\"shot.png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
        body += image
        body += Array("\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n\(title)\r\n--\(boundary)--\r\n".utf8)
        return ("multipart/form-data; boundary=\(boundary)", body)
    }

    @Test func uploadShowFetchDelete() async throws {
        try await TestServer.with { server in
            let png = TestImages.png(width: 37, height: 21)
            let (type, body) = multipart(png, title: "Sunset")
            let auth = ("Authorization", "Client-ID \(server.clientID)")
            let up = try await server.request(.POST, "/3/image", headers: [auth, ("Content-Type", type)], body: body, auth: false)
            #expect(up.status == 200)
            #expect(up.object["success"] as? Bool == true)
            #expect(up.object["status"] as? Int == 200)
            let data = try #require(up.object["data"] as? [String: Any])
            #expect(data["width"] as? Int == 37)
            #expect(data["height"] as? Int == 21)
            #expect(data["type"] as? String == "image/png")
            #expect(data["title"] as? String == "Sunset")
            #expect(data["size"] as? Int == png.count)
            #expect(data["datetime"] as? Int != nil)
            let id = try #require(data["id"] as? String)
            let deletehash = try #require(data["deletehash"] as? String)
            let link = try #require(data["link"] as? String)
            #expect(link.hasPrefix(server.base + "/i/\(id)"))
            #expect(up.header("X-RateLimit-ClientLimit") != nil)
            #expect(up.header("X-RateLimit-ClientRemaining") != nil)
            #expect(up.header("X-RateLimit-UserLimit") != nil)
            #expect(up.header("X-RateLimit-UserRemaining") != nil)
            #expect(up.header("X-RateLimit-UserReset") != nil)

            let fetched = try await server.get(String(link.dropFirst(server.base.count)), auth: false)
            #expect(fetched.body == png)
            let ranged = try await server.get(String(link.dropFirst(server.base.count)), headers: [("Range", "bytes=0-7")], auth: false)
            #expect(ranged.status == 206 && ranged.body == Array(png.prefix(8)))

            let shown = try await server.get("/3/image/\(id)", headers: [auth], auth: false)
            #expect((shown.object["data"] as? [String: Any])?["width"] as? Int == 37)
            let deleted = try await server.request(.DELETE, "/3/image/\(deletehash)", headers: [auth], auth: false)
            #expect(deleted.status == 200)
            #expect(deleted.object["data"] as? Bool == true)
            #expect(try await server.get("/3/image/\(id)", headers: [auth], auth: false).status == 404)
        }
    }

    @Test func rawAndBase64Uploads() async throws {
        try await TestServer.with { server in
            let png = TestImages.png(width: 5, height: 9)
            let raw = try await server.request(.POST, "/3/upload?title=raw", headers: [("Content-Type", "image/png")], body: png)
            #expect(raw.status == 200)
            #expect((raw.object["data"] as? [String: Any])?["height"] as? Int == 9)
            #expect((raw.object["data"] as? [String: Any])?["title"] as? String == "raw")
            let encoded = Data(png).base64EncodedString()
            let form = try await server.post("/3/image", form: ["image": encoded, "type": "base64", "description": "from base64"],
                                             headers: [("Authorization", "Client-ID \(server.clientID)")], auth: false)
            #expect(form.status == 200)
            #expect((form.object["data"] as? [String: Any])?["width"] as? Int == 5)
            #expect((form.object["data"] as? [String: Any])?["description"] as? String == "from base64")
            let garbage = try await server.request(.POST, "/3/image", headers: [("Content-Type", "application/octet-stream")], body: Array("hello".utf8))
            #expect(garbage.status == 400)
            #expect(garbage.object["success"] as? Bool == false)
            #expect(((garbage.object["data"] as? [String: Any])?["error"] as? String)?.contains("'image'") == true)
            let anonymous = try await server.request(.POST, "/3/image", headers: [("Content-Type", "image/png")], body: png, auth: false)
            #expect(anonymous.status == 401)
            let badClient = try await server.request(.POST, "/3/image", headers: [("Content-Type", "image/png"), ("Authorization", "Client-ID nobody")], body: png, auth: false)
            #expect(badClient.status == 403)
        }
    }

    @Test func rateLimitGives429WithHeaders() async throws {
        try await TestServer.with({ $0.userRateLimit = 3 }) { server in
            let auth = [("Authorization", "Client-ID \(server.clientID)")]
            var remaining: [String?] = []
            for _ in 0..<3 {
                let reply = try await server.get("/3/image/none", headers: auth, auth: false)
                #expect(reply.status == 404)
                remaining.append(reply.header("X-RateLimit-UserRemaining"))
            }
            #expect(remaining == ["2", "1", "0"])
            let limited = try await server.get("/3/image/none", headers: auth, auth: false)
            #expect(limited.status == 429)
            #expect(limited.header("X-RateLimit-UserRemaining") == "0")
            #expect(limited.header("X-RateLimit-UserLimit") == "3")
            #expect(limited.header("Retry-After") != nil)
            #expect(limited.object["success"] as? Bool == false)
        }
    }
}
