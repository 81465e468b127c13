import FerryCore
import FerryEngine
import FerryTestSupport
import Foundation
import Synchronization
import Testing

/// Interop version 8 of the resumable-upload draft (-09 to -11), against a server that speaks
/// it strictly (`DraftV8UploadServer`): every refusal it makes is a bug in the client unless
/// the test provoked it.
@Suite("Resumable uploads at interop version 8")
struct ResumableUploadV8Tests {
    struct Receipt: Decodable {
        var bytes: Int
        var sha256: String
    }

    /// What the engine reported that the shared RecordingObserver does not keep.
    final class PointObserver: TransferObserver {
        private let state = Mutex<(points: [ResumableUploadPoint], resumedAt: [Int64], lastSent: Int64)>(([], [], 0))
        var points: [ResumableUploadPoint] { state.withLock { $0.points } }
        var resumedAt: [Int64] { state.withLock { $0.resumedAt } }
        var lastSent: Int64 { state.withLock { $0.lastSent } }
        func transferDidCreateUploadResource(_ point: ResumableUploadPoint) { state.withLock { $0.points.append(point) } }
        func transferDidResume(atOffset offset: Int64, expectedTotal: Int64) { state.withLock { $0.resumedAt.append(offset) } }
        func transferDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) { state.withLock { $0.lastSent = totalBytesSent } }
    }

    /// A server, a file of `size` bytes and an engine; all removed after `body`.
    func withUpload<T>(
        options: DraftV8UploadServer.Options = .init(), size: Int, seed: UInt64, versions: [Int] = [8, 6, 5, 3],
        _ body: (DraftV8UploadServer, URL, TransferEngine) async throws -> T
    ) async throws -> T {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("photo.jpg")
        try Data(TestContent.bytes(count: size, seed: seed)).write(to: file)
        let server = try await DraftV8UploadServer.start(options: options)
        var configuration = EngineConfiguration()
        configuration.resumableUploadVersions = versions
        let engine = try TransferEngine(configuration: configuration)
        do {
            let value = try await body(server, file, engine)
            try await engine.shutdown()
            try await server.shutdown()
            return value
        } catch {
            try? await engine.shutdown()
            try? await server.shutdown()
            throw error
        }
    }

    static var retrying: RetryPolicy {
        var policy = RetryPolicy.standard
        policy.initialDelay = .milliseconds(20)
        return policy
    }

    func transfer(_ server: DraftV8UploadServer, _ file: URL, method: String = "POST", retry: RetryPolicy = retrying) -> Transfer {
        Transfer(request: Request(url: URL(string: server.baseURL + "/upload/photo")!, method: method), upload: .file(file), retry: retry)
    }

    /// The receipt and the file on the server's disk both hash to the source's SHA-256.
    func expectStored(_ server: DraftV8UploadServer, _ result: TransferResult, size: Int, seed: UInt64, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = TestContent.sha256Hex(count: size, seed: seed)
        #expect(result.response.statusCode == 200, sourceLocation: sourceLocation)
        let receipt = try JSONDecoder().decode(Receipt.self, from: try #require(result.body, sourceLocation: sourceLocation))
        #expect(receipt.bytes == size && receipt.sha256 == expected, sourceLocation: sourceLocation)
        let stored = try #require(server.completedUploads["photo"], sourceLocation: sourceLocation)
        #expect(try TestFiles.sha256Hex(ofFile: URL(fileURLWithPath: stored.path)) == expected, sourceLocation: sourceLocation)
    }

    func patches(_ server: DraftV8UploadServer) -> [RecordedRequest] { server.requests.filter { $0.method == "PATCH" } }

    @Test("negotiation picks 8, and every request speaks it as the draft asks")
    func negotiation() async throws {
        let size = 3 << 20
        try await withUpload(size: size, seed: 81) { server, file, engine in
            let result = try await engine.run(transfer(server, file))
            try expectStored(server, result, size: size, seed: 81)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH"])
            #expect(server.requests.allSatisfy { $0.header("Upload-Draft-Interop-Version") == "8" })
            #expect(server.creations == 1)
            #expect(server.refusals.isEmpty)
            let creation = server.requests[1]
            #expect(creation.header("Upload-Complete") == "?0" && creation.header("Upload-Length") == "\(size)")
            let append = server.requests[2]
            #expect(append.header("Content-Type") == "application/partial-upload")
            #expect(append.header("Upload-Complete") == "?1" && append.header("Upload-Offset") == "0")
            #expect(result.response.headers["Upload-Complete"] == "?1")
            // The 104s (resumption supported, then progress) do not disturb the client.
            #expect(server.responses.contains { $0.status == 104 && $0.header("Location") != nil })
            #expect(server.responses.contains { $0.status == 104 && $0.header("Upload-Offset") != nil })
        }
    }

    @Test("an upload cut at half resumes with HEAD and finishes byte-exact, with one creation")
    func cutAtHalf() async throws {
        let size = 4 << 20
        let half = size / 2
        try await withUpload(size: size, seed: 82) { server, file, engine in
            server.cutNextUpload(afterBytes: half)
            let observer = PointObserver()
            let result = try await engine.run(transfer(server, file), observer: observer)
            try expectStored(server, result, size: size, seed: 82)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "PATCH"])
            #expect(server.creations == 1)
            #expect(server.refusals.isEmpty)
            let head = try #require(server.responses.first { $0.header("Cache-Control") == "no-store" })
            #expect(head.header("Upload-Offset") == "\(half)" && head.header("Upload-Complete") == "?0" && head.header("Upload-Length") == "\(size)")
            let appends = patches(server)
            #expect(appends.map { $0.header("Upload-Offset") } == ["0", "\(half)"])
            #expect(appends.map(\.bodyLength) == [half, size - half])
            #expect(observer.resumedAt == [Int64(half)])
            #expect(observer.points.map(\.interopVersion) == [8])
            #expect(observer.lastSent == Int64(size))
        }
    }

    @Test("credentials and extra headers travel to OPTIONS, HEAD and PATCH; the original body's fields do not")
    func requestFieldsTravel() async throws {
        let size = 2 << 20
        try await withUpload(size: size, seed: 93) { server, file, engine in
            server.cutNextUpload(afterBytes: size / 2)
            var request = Request(url: URL(string: server.baseURL + "/upload/photo")!, method: "POST")
            request.headers = ["Authorization": "Bearer t0k", "X-Api-Key": "k1", "Content-Type": "image/jpeg"]
            let result = try await engine.run(Transfer(request: request, upload: .file(file), retry: Self.retrying))
            try expectStored(server, result, size: size, seed: 93)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "PATCH"])
            for sent in server.requests {
                #expect(sent.header("Authorization") == "Bearer t0k" && sent.header("X-Api-Key") == "k1", "\(sent.method)")
                let types = sent.headers.filter { $0.0.lowercased() == "content-type" }.map(\.1)
                switch sent.method {
                case "PATCH": #expect(types == ["application/partial-upload"])
                case "POST": #expect(types == ["image/jpeg"])
                default: #expect(types.isEmpty, "\(sent.method)")
                }
            }
        }
    }

    @Test("discardUpload deletes the resource an interrupted upload left, with the request's credentials; without a point it sends nothing")
    func discardUploadDeletesTheResource() async throws {
        let size = 2 << 20
        try await withUpload(size: size, seed: 95) { server, file, engine in
            server.cutNextUpload(afterBytes: size / 2)
            var request = Request(url: URL(string: server.baseURL + "/upload/photo")!, method: "POST")
            request.headers = ["Authorization": "Bearer t0k"]
            let observer = PointObserver()
            var transfer = Transfer(request: request, upload: .file(file), retry: .none)
            await expectFerryError(.networkConnectionLost) { try await engine.run(transfer, observer: observer) }
            let point = try #require(observer.points.first)

            await engine.discardUpload(of: transfer)  // no point: nothing is sent
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH"])

            transfer.resumeUpload = point
            await engine.discardUpload(of: transfer)
            let delete = try #require(server.requests.last)
            #expect(delete.method == "DELETE" && delete.uri == point.location.path)
            #expect(delete.header("Authorization") == "Bearer t0k")
            #expect(server.responses.last?.status == 204, "the server knew the upload and freed it")
        }
    }

    @Test("a HEAD answered 503 is asked again after Retry-After: the upload is not taken for forgotten")
    func unavailableHeadIsRetried() async throws {
        let size = 2 << 20
        try await withUpload(size: size, seed: 94) { server, file, engine in
            server.cutNextUpload(afterBytes: size / 2)
            server.failNextHeads(1)
            let started = ContinuousClock.now
            let result = try await engine.run(transfer(server, file, method: "POST"))
            try expectStored(server, result, size: size, seed: 94)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "HEAD", "PATCH"])
            #expect(server.creations == 1)
            #expect(patches(server).map { $0.header("Upload-Offset") } == ["0", "\(size / 2)"])
            #expect(ContinuousClock.now - started >= .seconds(1), "Retry-After: 1 was waited")
        }
    }

    @Test("a 409 names the server's offset, and the append goes on from there")
    func offsetConflict() async throws {
        let size = 3 << 20
        try await withUpload(size: size, seed: 83) { server, file, engine in
            server.cutNextUpload(afterBytes: 1_500_000)
            server.reportStaleOffsetOnNextHead(by: 250_000)
            let result = try await engine.run(transfer(server, file))
            try expectStored(server, result, size: size, seed: 83)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "PATCH", "PATCH"])
            #expect(patches(server).map { $0.header("Upload-Offset") } == ["0", "1250000", "1500000"])
            let conflict = try #require(server.responses.first { $0.status == 409 })
            #expect(conflict.header("Upload-Offset") == "1500000")
            #expect(server.refusals.map(\.status) == [409])
            #expect(server.creations == 1)
        }
    }

    @Test("a server that forgets the upload mid-way: a PUT starts a new upload")
    func forgottenPutRestarts() async throws {
        let size = 3 << 20
        try await withUpload(size: size, seed: 84) { server, file, engine in
            server.cutNextUpload(afterBytes: size / 2, thenForget: true)
            let result = try await engine.run(transfer(server, file, method: "PUT"))
            try expectStored(server, result, size: size, seed: 84)
            #expect(server.requests.map(\.method) == ["OPTIONS", "PUT", "PATCH", "HEAD", "PUT", "PATCH"])
            #expect(server.responses.contains { $0.status == 404 })
            #expect(server.creations == 2)
            #expect(server.refusals.isEmpty)
        }
    }

    @Test("a forgotten POST that may have arrived whole is not sent again: from an earlier run, or after its answer was lost")
    func forgottenPostFails() async throws {
        try await withUpload(size: 2 << 20, seed: 85) { server, file, engine in
            // An earlier run's resource that the server no longer knows.
            var earlier = transfer(server, file)
            earlier.resumeUpload = ResumableUploadPoint(location: URL(string: server.baseURL + "/uploads/gone")!, interopVersion: 8)
            let error = await expectFerryError(.badServerResponse) { try await engine.run(earlier) }
            #expect(error?.message.contains("not sent again") == true)
            #expect(server.requests.map(\.method) == ["HEAD"])

            // This run: every byte left, the answer was lost, the server forgot.
            server.dropNextAnswer(thenForget: true)
            let lost = await expectFerryError(.badServerResponse) { try await engine.run(transfer(server, file)) }
            #expect(lost?.message.contains("not sent again") == true)
            #expect(server.requests.map(\.method) == ["HEAD", "OPTIONS", "POST", "PATCH", "HEAD"])
            #expect(server.completedUploads["photo"] != nil && server.creations == 1)
        }
    }

    @Test("a forgotten POST that cannot have arrived whole starts a new upload")
    func forgottenPartialPostRestarts() async throws {
        let size = 16 << 20
        try await withUpload(size: size, seed: 86) { server, file, engine in
            // Cut at its first body bytes: most of the 16 MiB never left the client.
            server.cutNextUpload(afterBytes: 0, thenForget: true)
            let result = try await engine.run(transfer(server, file))
            try expectStored(server, result, size: size, seed: 86)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "POST", "PATCH"])
            #expect(server.creations == 2)
        }
    }

    @Test("a HEAD that says the upload is complete ends a POST: no append to a completed upload, and not sent again")
    func completedOnHead() async throws {
        try await withUpload(size: 2 << 20, seed: 87) { server, file, engine in
            server.dropNextAnswer()
            let error = await expectFerryError(.badServerResponse) { try await engine.run(transfer(server, file, method: "POST")) }
            #expect(error?.message.contains("Upload-Complete: ?1") == true)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD"])
            #expect(server.completedUploads["photo"]?.sha256 == TestContent.sha256Hex(count: 2 << 20, seed: 87))
            #expect(server.refusals.isEmpty)
        }
    }

    @Test("a PUT whose completed upload lost its answer is sent again as a new upload (it is idempotent), never appended to")
    func completedPutIsSentAgain() async throws {
        try await withUpload(size: 2 << 20, seed: 88) { server, file, engine in
            server.dropNextAnswer()
            let result = try await engine.run(transfer(server, file, method: "PUT"))
            try expectStored(server, result, size: 2 << 20, seed: 88)
            #expect(Array(server.requests.map(\.method).prefix(4)) == ["OPTIONS", "PUT", "PATCH", "HEAD"])
            #expect(server.requests.map(\.method).dropFirst(4).first == "PUT", "a new upload, not an append: \(server.requests.map(\.method))")
            #expect(server.creations == 2)
            #expect(server.refusals.isEmpty)
        }
    }

    @Test("max-append-size: the rest goes up in parts no larger, each incomplete but the last")
    func appendLimit() async throws {
        let size = 3 << 20 + 1 << 19
        let options = DraftV8UploadServer.Options(limits: .init(maxSize: 1 << 30, maxAppendSize: 1 << 20, maxAge: 600))
        try await withUpload(options: options, size: size, seed: 88) { server, file, engine in
            server.cutNextUpload(afterBytes: 300_000)
            let result = try await engine.run(transfer(server, file))
            try expectStored(server, result, size: size, seed: 88)
            let appends = patches(server)
            #expect(appends.allSatisfy { ($0.header("Content-Length").flatMap(Int.init) ?? .max) <= 1 << 20 })
            #expect(appends.map { $0.header("Upload-Complete") } == ["?0", "?0", "?0", "?0", "?1"])
            let offsets = appends.compactMap { $0.header("Upload-Offset").flatMap(Int.init) }
            #expect(offsets == [0, 300_000, 300_000 + 1 << 20, 300_000 + 2 << 20, 300_000 + 3 << 20])
            #expect(server.refusals.isEmpty)
            #expect(server.creations == 1)
        }
    }

    @Test("max-size: announced below the body, a plain upload; found only at creation, the server's 413 is the answer")
    func sizeLimit() async throws {
        let size = 2 << 20
        let small = DraftV8UploadServer.Limits(maxSize: 1 << 20)
        try await withUpload(options: .init(limits: small), size: size, seed: 89) { server, file, engine in
            let result = try await engine.run(transfer(server, file))
            try expectStored(server, result, size: size, seed: 89)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST"])
            #expect(server.requests[1].header("Upload-Complete") == nil && server.creations == 0)
        }
        try await withUpload(options: .init(limits: small, announceLimitsInOptions: false), size: size, seed: 89) { server, file, engine in
            let result = try await engine.run(transfer(server, file))
            #expect(result.response.statusCode == 413)
            #expect(result.response.headers["Upload-Limit"] == "max-size=\(1 << 20)")
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST"])
            #expect(server.creations == 0)
        }
    }

    @Test("a v8 server that announces no limits is known by Accept-Patch alone")
    func acceptPatchOnly() async throws {
        try await withUpload(options: .init(limits: .init(), announceLimitsInOptions: false), size: 2 << 20, seed: 90) { server, file, engine in
            let result = try await engine.run(transfer(server, file))
            try expectStored(server, result, size: 2 << 20, seed: 90)
            let options = try #require(server.responses.first)
            #expect(options.header("Accept-Patch") == "application/partial-upload" && options.header("Upload-Limit") == nil)
            #expect(server.creations == 1 && server.refusals.isEmpty)
        }
    }

    @Test("a resource from an earlier run (interop 8) continues with HEAD + PATCH in a new engine, no new creation")
    func earlierRun() async throws {
        let size = 3 << 20
        try await withUpload(size: size, seed: 91) { server, file, engine in
            server.cutNextUpload(afterBytes: 1 << 20)
            let first = PointObserver()
            await expectFerryError(.networkConnectionLost) { try await engine.run(transfer(server, file, retry: .none), observer: first) }
            let point = try #require(first.points.first)
            #expect(point.interopVersion == 8)
            // Another engine, as another process would have after a restart.
            let later = try TransferEngine(configuration: EngineConfiguration())
            var resumed = transfer(server, file)
            resumed.resumeUpload = point
            let before = server.requests.count
            let result: TransferResult
            do {
                result = try await later.run(resumed)
                try await later.shutdown()
            } catch {
                try? await later.shutdown()
                throw error
            }
            try expectStored(server, result, size: size, seed: 91)
            #expect(server.requests.dropFirst(before).map(\.method) == ["HEAD", "PATCH"])
            #expect(patches(server).last?.header("Upload-Offset") == "\(1 << 20)")
            #expect(server.creations == 1 && server.refusals.isEmpty)
        }
    }

    @Test("a body that changed since the earlier run: that upload is cancelled with DELETE and a new one made")
    func changedBody() async throws {
        try await withUpload(size: 3 << 20, seed: 92) { server, file, engine in
            server.cutNextUpload(afterBytes: 1 << 20)
            let first = PointObserver()
            await expectFerryError(.networkConnectionLost) { try await engine.run(transfer(server, file, retry: .none), observer: first) }
            let size = 5 << 19
            try Data(TestContent.bytes(count: size, seed: 93)).write(to: file)
            let point = try #require(first.points.first)
            var resumed = transfer(server, file)
            resumed.resumeUpload = point
            let before = server.requests.count
            let result = try await engine.run(resumed)
            try expectStored(server, result, size: size, seed: 93)
            #expect(server.requests.dropFirst(before).map(\.method) == ["HEAD", "DELETE", "POST", "PATCH"])
            #expect(server.responses.contains { $0.status == 204 && $0.header("Upload-Offset") == nil && $0.header("Upload-Complete") == nil })
            #expect(server.creations == 2 && server.refusals.isEmpty)
        }
    }

    @Test("fallback: a server that speaks none gets one plain upload; so does the v8 server from a client without 8")
    func fallback() async throws {
        let size = 2 << 20
        try await withServerAndEngine(configure: { $0.resumableUploadVersions = [8] }) { server, engine in
            let dir = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("big.bin")
            try Data(TestContent.bytes(count: size, seed: 94)).write(to: file)
            let result = try await engine.run(Transfer(request: Request(url: url(server, "/upload"), method: "PUT"), upload: .file(file)))
            let receipt = try JSONDecoder().decode(Receipt.self, from: try #require(result.body))
            #expect(receipt.sha256 == TestContent.sha256Hex(count: size, seed: 94))
            let puts = server.requests.filter { $0.method == "PUT" }
            #expect(puts.count == 1 && puts.first?.header("Upload-Draft-Interop-Version") == nil && puts.first?.header("Upload-Complete") == nil)
        }
        try await withUpload(size: size, seed: 95, versions: [6, 5, 3]) { server, file, engine in
            let result = try await engine.run(transfer(server, file))
            try expectStored(server, result, size: size, seed: 95)
            #expect(server.requests.map(\.method) == ["OPTIONS", "POST"])
            #expect(server.responses.first?.status == 400 && server.responses.first?.header("Upload-Draft-Interop-Version") == "8")
            #expect(server.requests[1].header("Upload-Complete") == nil && server.creations == 0)
        }
    }

    @Test("the v8 server itself refuses what the draft forbids")
    func strictServer() async throws {
        try await withUpload(size: 1, seed: 96) { server, _, engine in
            func send(_ method: String, _ path: String, _ fields: [(String, String)], _ body: Data? = nil) async throws -> Response {
                let request = Request(url: URL(string: server.baseURL + path)!, method: method, headers: HeaderFields(fields), body: body)
                return try await engine.run(Transfer(request: request, resumableUpload: .disabled)).response
            }
            let v8 = [("Upload-Draft-Interop-Version", "8")]
            let partial = [("Content-Type", "application/partial-upload")]
            let ten = Data(repeating: 7, count: 10)
            let created = try await send("POST", "/upload/strict", v8 + [("Upload-Complete", "?0"), ("Upload-Length", "10")], Data())
            #expect(created.statusCode == 201 && created.headers["Upload-Complete"] == "?0")
            let location = try #require(created.headers["Location"])
            #expect(location.hasPrefix(DraftV8UploadServer.resourcePath))
            let complete = [("Upload-Offset", "0"), ("Upload-Complete", "?1")]
            #expect(try await send("PATCH", location, partial + complete, ten).statusCode == 400)
            #expect(try await send("PATCH", location, v8 + complete, ten).statusCode == 415)
            #expect(try await send("PATCH", location, v8 + partial + [("Upload-Offset", "0")], ten).statusCode == 400)
            let conflict = try await send("PATCH", location, v8 + partial + [("Upload-Offset", "4"), ("Upload-Complete", "?1")], ten)
            #expect(conflict.statusCode == 409 && conflict.headers["Upload-Offset"] == "0")
            #expect(try await send("PATCH", location, v8 + partial + complete, ten.prefix(6)).statusCode == 400)
            let done = try await send("PATCH", location, v8 + partial + complete, ten)
            #expect(done.statusCode == 200 && done.headers["Upload-Complete"] == "?1")
            #expect(try await send("PATCH", location, v8 + partial + [("Upload-Offset", "10"), ("Upload-Complete", "?1")], Data()).statusCode == 400)
            let head = try await send("HEAD", location, v8)
            #expect(head.statusCode == 204 && head.headers["Upload-Offset"] == "10" && head.headers["Upload-Complete"] == "?1")
            #expect(head.headers["Cache-Control"] == "no-store")
            #expect(try await send("DELETE", location, v8).statusCode == 204)
            #expect(try await send("HEAD", location, v8).statusCode == 404)
            #expect(server.refusals.map(\.status) == [400, 415, 400, 409, 400, 400])
            #expect(server.completedUploads["strict"]?.bytes == 10)
        }
    }
}
