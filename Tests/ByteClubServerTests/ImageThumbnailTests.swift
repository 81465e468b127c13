import Foundation
import Testing

/// Imgur's thumbnail links for images-API uploads: `<id>s.jpg` … `<id>h.jpg`, made by libvips.
@Suite("Image thumbnails (Imgur suffixes)")
struct ImageThumbnailTests {
    @Test func suffixedLinksServeResizedImages() async throws {
        try await TestServer.with { server in
            let auth = [("Authorization", "Client-ID \(server.clientID)")]
            let png = TestImages.png(width: 800, height: 400)
            let uploaded = try await server.request(.POST, "/3/image", headers: auth + [("Content-Type", "image/png")], body: png, auth: false)
            #expect(uploaded.status == 200)
            let data = try #require(uploaded.object["data"] as? [String: Any])
            let id = try #require(data["id"] as? String)
            let deletehash = try #require(data["deletehash"] as? String)

            // The original is untouched at its link.
            let original = try await server.get("/i/\(id).png", auth: false)
            #expect(original.body == png)

            // m: a 320 px box, as JPEG; proportions kept.
            let medium = try await server.get("/i/\(id)m.jpg", auth: false)
            #expect(medium.status == 200)
            #expect(medium.header("Content-Type") == "image/jpeg")
            #expect(TestImages.jpegSize(medium.body)! == (320, 160))
            #expect(try await server.get("/i/\(id)m.jpg", auth: false).body == medium.body, "served again from the cache")

            // s as PNG: a 90 px square, cropped around the centre as Imgur's; b: 160 px square;
            // t: the same 160 px box as b, but the whole image.
            let small = try await server.get("/i/\(id)s.png", auth: false)
            #expect(small.header("Content-Type") == "image/png")
            #expect(TestImages.pngSize(small.body)! == (90, 90))
            #expect(TestImages.jpegSize(try await server.get("/i/\(id)b.jpg", auth: false).body)! == (160, 160))
            #expect(TestImages.jpegSize(try await server.get("/i/\(id)t.jpg", auth: false).body)! == (160, 80))
            // h: a 1024 px box; never enlarged.
            #expect(TestImages.jpegSize(try await server.get("/i/\(id)h.jpg", auth: false).body)! == (800, 400))

            // HEAD, ranges and validators like any file.
            let head = try await server.request(.HEAD, "/i/\(id)m.jpg", auth: false)
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == String(medium.body.count))
            #expect(head.body.isEmpty)
            let range = try await server.get("/i/\(id)m.jpg", headers: [("Range", "bytes=0-9")], auth: false)
            #expect(range.status == 206)
            #expect(range.body == Array(medium.body.prefix(10)))
            let etag = try #require(medium.header("ETag"))
            #expect(try await server.get("/i/\(id)m.jpg", headers: [("If-None-Match", etag)], auth: false).status == 304)

            // Not a thumbnail: an unknown letter, an unknown id, a format other than JPEG or PNG.
            #expect(try await server.get("/i/\(id)x.jpg", auth: false).status == 404)
            #expect(try await server.get("/i/zzzzzzzm.jpg", auth: false).status == 404)
            let gif = try await server.get("/i/\(id)m.gif", auth: false)
            #expect(gif.status == 404)
            #expect(gif.text.contains(".jpg or .png"))

            // Deleting the image removes its thumbnails.
            #expect(try await server.request(.DELETE, "/3/image/\(deletehash)", headers: auth, auth: false).status == 200)
            #expect(try await server.get("/i/\(id)m.jpg", auth: false).status == 404)
            let thumbs = try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + "/files/thumbs")
            #expect(thumbs.isEmpty, "thumbnails of the deleted image are removed: \(thumbs)")
        }
    }
}
