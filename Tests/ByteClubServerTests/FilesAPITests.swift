import Foundation
import Testing

@Suite("Files API (Dropbox v1 shape)", .postgres)
struct FilesAPITests {
    @Test(arguments: Backend.allCases) func putThenMetadataAndDownload(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let put = try await server.put("/1/files_put/dropbox/Notes/Hello.txt", Array("hello byte club!".utf8))
            #expect(put.status == 200)
            let meta = put.object
            #expect(meta["path"] as? String == "/Notes/Hello.txt")
            #expect(meta["bytes"] as? Int == 16)
            #expect(meta["size"] as? String == "16 bytes")
            #expect(meta["is_dir"] as? Bool == false)
            #expect(meta["root"] as? String == "dropbox")
            #expect(meta["mime_type"] as? String == "text/plain")
            #expect(meta["thumb_exists"] as? Bool == false)
            #expect(meta["icon"] as? String == "page_white_text")
            #expect(meta["rev"] as? String != nil)
            #expect(meta["revision"] as? Int != nil)
            let modified = try #require(meta["modified"] as? String)
            #expect(modified.range(of: #"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000$"#, options: .regularExpression) != nil)

            let folder = try await server.get("/1/metadata/dropbox/notes")
            #expect(folder.status == 200)
            #expect(folder.object["is_dir"] as? Bool == true)
            #expect(folder.object["icon"] as? String == "folder")
            #expect(folder.object["hash"] as? String != nil)
            let contents = try #require(folder.object["contents"] as? [[String: Any]])
            #expect(contents.map { $0["path"] as? String } == ["/Notes/Hello.txt"])

            // Case-insensitive paths, the bytes, and metadata in a header.
            let file = try await server.get("/1/files/dropbox/NOTES/hello.TXT")
            #expect(file.status == 200)
            #expect(file.text == "hello byte club!")
            #expect(file.header("ETag") == "\"\(meta["rev"] as! String)\"")
            let headerMeta = try #require(file.header("x-dropbox-metadata"))
            #expect(headerMeta.contains("\"path\":\"/Notes/Hello.txt\""))

            let root = try await server.get("/1/metadata/dropbox")
            #expect(root.object["path"] as? String == "/")
            #expect((root.object["contents"] as? [Any])?.count == 1)
        }
    }

    @Test(arguments: Backend.allCases) func folderHashAndFileLimit(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            for i in 0..<3 { _ = try await server.put("/1/files_put/dropbox/f/\(i).txt", [UInt8(i)]) }
            let listed = try await server.get("/1/metadata/dropbox/f")
            let hash = try #require(listed.object["hash"] as? String)
            let same = try await server.get("/1/metadata/dropbox/f?hash=\(hash)")
            #expect(same.status == 304)
            _ = try await server.put("/1/files_put/dropbox/f/3.txt", [3])
            let changed = try await server.get("/1/metadata/dropbox/f?hash=\(hash)")
            #expect(changed.status == 200)
            let limited = try await server.get("/1/metadata/dropbox/f?file_limit=2")
            #expect(limited.status == 406)
            #expect(limited.object["error"] as? String != nil)
            let unlisted = try await server.get("/1/metadata/dropbox/f?list=false")
            #expect(unlisted.object["contents"] == nil)
            let bad = try await server.get("/1/metadata/dropbox/f?list=maybe")
            #expect(bad.status == 400)
            #expect((bad.object["error"] as? String)?.contains("'list'") == true)
            let missing = try await server.get("/1/metadata/dropbox/nope")
            #expect(missing.status == 404)
        }
    }

    @Test(arguments: Backend.allCases) func overwriteParentRevAndAutorename(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let first = try await server.put("/1/files_put/dropbox/doc.txt", Array("one".utf8))
            let rev1 = try #require(first.object["rev"] as? String)
            // overwrite=false on an existing file: "doc (1).txt".
            let second = try await server.put("/1/files_put/dropbox/doc.txt?overwrite=false", Array("two".utf8))
            #expect(second.object["path"] as? String == "/doc (1).txt")
            // parent_rev matching the current rev overwrites.
            let third = try await server.put("/1/files_put/dropbox/doc.txt?parent_rev=\(rev1)", Array("three".utf8))
            #expect(third.object["path"] as? String == "/doc.txt")
            // A stale parent_rev is a conflict: kept as the writer's conflicted copy (ConflictTests).
            let fourth = try await server.put("/1/files_put/dropbox/doc.txt?parent_rev=\(rev1)", Array("four".utf8))
            #expect(fourth.object["path"] as? String == "/doc (dev's conflicted copy).txt")
            // autorename=false turns the conflict into 409 and changes nothing.
            let refused = try await server.put("/1/files_put/dropbox/doc.txt?overwrite=false&autorename=false", Array("five".utf8))
            #expect(refused.status == 409)
            #expect(try await server.get("/1/files/dropbox/doc.txt").text == "three")
            // Plain overwrite (the default).
            _ = try await server.put("/1/files_put/dropbox/doc.txt", Array("six".utf8))
            #expect(try await server.get("/1/files/dropbox/doc.txt").text == "six")
            let bad = try await server.put("/1/files_put/dropbox/doc.txt?overwrite=perhaps", [1])
            #expect(bad.status == 400)
            #expect((bad.object["error"] as? String)?.contains("'overwrite'") == true)
        }
    }

    @Test func rangesAndValidators() async throws {
        try await TestServer.with { server in
            let data = Bytes.pattern(100_000)
            let put = try await server.put("/1/files_put/dropbox/blob.bin", data)
            let etag = "\"\(put.object["rev"] as! String)\""
            let part = try await server.get("/1/files/dropbox/blob.bin", headers: [("Range", "bytes=1000-1999")])
            #expect(part.status == 206)
            #expect(part.body == Array(data[1000...1999]))
            #expect(part.header("Content-Range") == "bytes 1000-1999/100000")
            let tail = try await server.get("/1/files/dropbox/blob.bin", headers: [("Range", "bytes=-10")])
            #expect(tail.body == Array(data.suffix(10)))
            let open = try await server.get("/1/files/dropbox/blob.bin", headers: [("Range", "bytes=99990-")])
            #expect(open.body == Array(data.suffix(10)))
            let outside = try await server.get("/1/files/dropbox/blob.bin", headers: [("Range", "bytes=200000-")])
            #expect(outside.status == 416)
            #expect(outside.header("Content-Range") == "bytes */100000")
            let fresh = try await server.get("/1/files/dropbox/blob.bin", headers: [("Range", "bytes=0-9"), ("If-Range", etag)])
            #expect(fresh.status == 206)
            let stale = try await server.get("/1/files/dropbox/blob.bin", headers: [("Range", "bytes=0-9"), ("If-Range", "\"old\"")])
            #expect(stale.status == 200)
            #expect(stale.body.count == 100_000)
            let notModified = try await server.get("/1/files/dropbox/blob.bin", headers: [("If-None-Match", etag)])
            #expect(notModified.status == 304)
        }
    }

    @Test(arguments: Backend.allCases) func searchFindsThePhotos(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let png = TestImages.png(width: 4, height: 4)
            _ = try await server.put("/1/files_put/dropbox/Photos/beach.jpg", png)
            _ = try await server.put("/1/files_put/dropbox/Photos/Sub/hills.JPG", png)
            _ = try await server.put("/1/files_put/dropbox/Photos/notes.txt", [1])
            _ = try await server.put("/1/files_put/dropbox/other.jpg", png)
            let found = try await server.get("/1/search/dropbox/Photos?query=.jpg")
            #expect(found.status == 200)
            let paths = (found.json as? [[String: Any]])?.compactMap { $0["path"] as? String }
            #expect(paths == ["/Photos/beach.jpg", "/Photos/Sub/hills.JPG"])
            let all = try await server.get("/1/search/dropbox/?query=jpg")
            #expect((all.json as? [Any])?.count == 3)
            let missing = try await server.get("/1/search/dropbox/Photos")
            #expect(missing.status == 400)
        }
    }

    @Test(arguments: Backend.allCases) func folderOperations(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let created = try await server.post("/1/fileops/create_folder", form: ["root": "dropbox", "path": "/Album"])
            #expect(created.status == 200)
            #expect(created.object["is_dir"] as? Bool == true)
            let again = try await server.post("/1/fileops/create_folder", form: ["root": "dropbox", "path": "/album"])
            #expect(again.status == 403)
            _ = try await server.put("/1/files_put/dropbox/Album/a.txt", Array("a".utf8))
            let moved = try await server.post("/1/fileops/move", form: ["root": "dropbox", "from_path": "/Album", "to_path": "/Archive/Album 2013"])
            #expect(moved.status == 200)
            #expect(moved.object["path"] as? String == "/Archive/Album 2013")
            #expect(try await server.get("/1/files/dropbox/Archive/Album 2013/a.txt".addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!).text == "a")
            #expect(try await server.get("/1/metadata/dropbox/Album").status == 404)
            let into = try await server.post("/1/fileops/move", form: ["root": "dropbox", "from_path": "/Archive", "to_path": "/Archive/inner"])
            #expect(into.status == 403)
            let deleted = try await server.post("/1/fileops/delete", form: ["root": "dropbox", "path": "/Archive"])
            #expect(deleted.status == 200)
            #expect(deleted.object["is_deleted"] as? Bool == true)
            #expect(try await server.get("/1/metadata/dropbox/Archive/Album 2013/a.txt".addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!).status == 404)
            let gone = try await server.post("/1/fileops/delete", form: ["root": "dropbox", "path": "/Archive"])
            #expect(gone.status == 404)
            let noPath = try await server.post("/1/fileops/delete", form: ["root": "dropbox"])
            #expect(noPath.status == 400)
            #expect((noPath.object["error"] as? String)?.contains("'path'") == true)
        }
    }

    @Test(arguments: Backend.allCases) func chunkedUploadAndFormUpload(backend: Backend) async throws {
        try await TestServer.with(backend: backend) { server in
            let data = Bytes.pattern(300_000, seed: 3)
            let first = try await server.put("/1/chunked_upload", Array(data[0..<100_000]))
            #expect(first.status == 200)
            let id = try #require(first.object["upload_id"] as? String)
            #expect(first.object["offset"] as? Int == 100_000)
            let wrong = try await server.put("/1/chunked_upload?upload_id=\(id)&offset=5", [1, 2, 3])
            #expect(wrong.status == 400)
            let second = try await server.put("/1/chunked_upload?upload_id=\(id)&offset=100000", Array(data[100_000...]))
            #expect(second.object["offset"] as? Int == 300_000)
            let commit = try await server.post("/1/commit_chunked_upload/dropbox/big/chunked.bin", form: ["upload_id": id])
            #expect(commit.status == 200)
            #expect(commit.object["bytes"] as? Int == 300_000)
            #expect(Bytes.sha256(try await server.get("/1/files/dropbox/big/chunked.bin").body) == Bytes.sha256(data))

            let boundary = "XyZ123"
            var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"form.txt\"\r\nContent-Type: text/plain\r\n\r\n".utf8)
            body += Array("sent as a form".utf8) + Array("\r\n--\(boundary)--\r\n".utf8)
            let form = try await server.request(.POST, "/1/files/dropbox/Uploads", headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: body)
            #expect(form.status == 200)
            #expect(form.object["path"] as? String == "/Uploads/form.txt")
            #expect(try await server.get("/1/files/dropbox/uploads/form.txt").text == "sent as a form")
        }
    }

    @Test func thumbnailsAreRealImages() async throws {
        try await TestServer.with { server in
            let put = try await server.put("/1/files_put/dropbox/Photos/wide.png", TestImages.png(width: 400, height: 200))
            #expect(put.object["thumb_exists"] as? Bool == true)
            #expect(put.object["icon"] as? String == "page_white_picture")
            let thumb = try await server.get("/1/thumbnails/dropbox/Photos/wide.png?size=m&format=png")
            #expect(thumb.status == 200)
            #expect(thumb.header("Content-Type") == "image/png")
            #expect(Array(thumb.body.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
            // PNG IHDR: width and height big-endian at offsets 16 and 20: 128×64 fits "m" (128×128).
            let width = thumb.body[16..<20].reduce(0) { $0 << 8 | Int($1) }
            let height = thumb.body[20..<24].reduce(0) { $0 << 8 | Int($1) }
            #expect(width == 128 && height == 64)
            let jpeg = try await server.get("/1/thumbnails/dropbox/Photos/wide.png?size=xs")
            #expect(Array(jpeg.body.prefix(3)) == [0xFF, 0xD8, 0xFF])
            let cached = try await server.get("/1/thumbnails/dropbox/Photos/wide.png?size=xs")
            #expect(cached.body == jpeg.body)
            _ = try await server.put("/1/files_put/dropbox/Photos/fake.png", Array("not an image".utf8))
            #expect(try await server.get("/1/thumbnails/dropbox/Photos/fake.png").status == 415)
            #expect(try await server.get("/1/thumbnails/dropbox/Photos/wide.png?size=huge").status == 400)
        }
    }
}
