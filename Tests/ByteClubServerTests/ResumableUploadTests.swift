import Foundation
import Testing

@Suite("Resumable uploads (IETF draft, via NIOResumableUpload)")
struct ResumableUploadTests {
    /// Starts a resumable `files_put`, sends half the body, vanishes; asks the upload resource
    /// for its offset, appends the rest; the stored file is byte-exact.
    @Test func interruptedUploadResumesByteExact() async throws {
        try await TestServer.with { server in
            let data = Bytes.pattern(8 << 20, seed: 11)
            let auth = ("Authorization", "Bearer \(server.token)")
            var location = ""
            do {
                let first = try RawHTTP(port: server.port)
                try await first.head("PUT", "/1/files_put/dropbox/Resumed/big.bin", [
                    auth, ("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?1"), ("Content-Length", "\(data.count)"),
                ])
                let informational = try await first.readResponse()
                #expect(informational.status == 104)
                location = try #require(informational.headers["location"])
                try await first.send(Array(data[..<(data.count / 2)]))
                // The connection goes away here, halfway.
            }
            let resource = String(location.dropFirst(server.base.count))
            #expect(resource.hasPrefix("/resumable_upload/"))

            let probe = try RawHTTP(port: server.port)
            try await probe.head("HEAD", resource, [("Upload-Draft-Interop-Version", "6")])
            let offsetReply = try await probe.readResponse(method: "HEAD")
            #expect(offsetReply.status == 204)
            let offset = try #require(offsetReply.headers["upload-offset"].flatMap(Int.init))
            #expect(offset > 0 && offset <= data.count / 2)

            let append = try RawHTTP(port: server.port)
            try await append.head("PATCH", resource, [
                ("Upload-Draft-Interop-Version", "6"), ("Upload-Offset", "\(offset)"), ("Upload-Complete", "?1"),
                ("Content-Type", "application/partial-upload"), ("Content-Length", "\(data.count - offset)"),
            ])
            try await append.send(Array(data[offset...]))
            let (_, final) = try await append.readFinal()
            #expect(final.status == 200, "\(final.text)")
            #expect(final.text.contains("\"path\":\"/Resumed/big.bin\""))
            #expect(final.headers["upload-offset"] == "\(data.count)")

            let stored = try await server.get("/1/files/dropbox/Resumed/big.bin")
            #expect(stored.body.count == data.count)
            #expect(Bytes.sha256(stored.body) == Bytes.sha256(data))
        }
    }

    /// An image upload through the same protocol, created incomplete and finished by a PATCH.
    @Test func imageUploadInTwoParts() async throws {
        try await TestServer.with { server in
            let png = TestImages.png(width: 64, height: 48)
            let cut = png.count / 3
            let first = try RawHTTP(port: server.port)
            try await first.head("POST", "/3/image", [
                ("Authorization", "Client-ID \(server.clientID)"), ("Content-Type", "image/png"),
                ("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?0"), ("Content-Length", "\(cut)"),
            ])
            try await first.send(Array(png[..<cut]))
            let (informational, created) = try await first.readFinal()
            #expect(informational.first?.status == 104)
            #expect(created.status == 201)
            #expect(created.headers["upload-offset"] == "\(cut)")
            let resource = String(try #require(created.headers["location"]).dropFirst(server.base.count))

            let append = try RawHTTP(port: server.port)
            try await append.head("PATCH", resource, [
                ("Upload-Draft-Interop-Version", "6"), ("Upload-Offset", "\(cut)"), ("Upload-Complete", "?1"),
                ("Content-Type", "application/partial-upload"), ("Content-Length", "\(png.count - cut)"),
            ])
            try await append.send(Array(png[cut...]))
            let (_, final) = try await append.readFinal()
            #expect(final.status == 200, "\(final.text)")
            let object = try JSONSerialization.jsonObject(with: Data(final.body)) as? [String: Any]
            let data = object?["data"] as? [String: Any]
            #expect(data?["width"] as? Int == 64)
            #expect(data?["height"] as? Int == 48)
            #expect(data?["size"] as? Int == png.count)
        }
    }

    /// A wrong offset is a conflict; an unknown resource is 404; plain requests still work on the
    /// same connection afterwards.
    @Test func conflictsAndUnknownResources() async throws {
        try await TestServer.with { server in
            let unknown = try RawHTTP(port: server.port)
            try await unknown.head("HEAD", "/resumable_upload/123-456", [("Upload-Draft-Interop-Version", "6")])
            #expect(try await unknown.readResponse(method: "HEAD").status == 404)

            let first = try RawHTTP(port: server.port)
            try await first.head("PUT", "/1/files_put/dropbox/c.bin", [
                ("Authorization", "Bearer \(server.token)"), ("Upload-Draft-Interop-Version", "6"),
                ("Upload-Complete", "?0"), ("Content-Length", "10"),
            ])
            try await first.send(Bytes.pattern(10))
            let (_, created) = try await first.readFinal()
            #expect(created.status == 201)
            let resource = String(try #require(created.headers["location"]).dropFirst(server.base.count))
            let wrong = try RawHTTP(port: server.port)
            try await wrong.head("PATCH", resource, [
                ("Upload-Draft-Interop-Version", "6"), ("Upload-Offset", "3"), ("Upload-Complete", "?1"),
                ("Content-Type", "application/partial-upload"), ("Content-Length", "1"),
            ])
            try await wrong.send([0])
            #expect(try await wrong.readFinal().final.status == 409)
            // Keep-alive still serves plain requests after a resumable one.
            try await first.head("GET", "/1/metadata/dropbox/", [("Authorization", "Bearer \(server.token)")])
            #expect(try await first.readFinal().final.status == 200)
        }
    }
}
