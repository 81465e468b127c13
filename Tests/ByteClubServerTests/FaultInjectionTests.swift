import AsyncHTTPClient
import ByteClubServer
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite("Fault injection")
struct FaultInjectionTests {
    @Test func failsTheNextRequestsWithRetryAfter() async throws {
        try await TestServer.with({ configuration in
            var faults = FaultInjection()
            faults.failNextRequests = 2
            faults.failStatus = 503
            faults.retryAfterSeconds = 7
            configuration.faults = faults
        }) { server in
            for _ in 0..<2 {
                let failed = try await server.get("/1/metadata/dropbox/")
                #expect(failed.status == 503)
                #expect(failed.header("Retry-After") == "7")
                #expect(failed.object["error"] as? String != nil)
            }
            #expect(try await server.get("/1/metadata/dropbox/").status == 200)
        }
    }

    @Test func throttled429() async throws {
        try await TestServer.with({ configuration in
            var faults = FaultInjection()
            faults.failNextRequests = 1
            faults.failStatus = 429
            configuration.faults = faults
        }) { server in
            let failed = try await server.get("/1/metadata/dropbox/")
            #expect(failed.status == 429)
            #expect(failed.header("Retry-After") == "1")
        }
    }

    @Test func dropsTheFirstConnectionAfterNBytes() async throws {
        try await TestServer.with({ configuration in
            var faults = FaultInjection()
            faults.dropAfterBytes = 200_000
            faults.dropConnections = 1
            configuration.faults = faults
        }) { server in
            // Connection 0 (this raw one) carries the upload, 100 kB, then is dropped mid-download.
            let data = Bytes.pattern(1 << 20)
            let upload = try RawHTTP(port: server.port)
            try await upload.head("PUT", "/1/files_put/dropbox/d.bin", [("Authorization", "Bearer \(server.token)"), ("Content-Length", "100000")])
            try await upload.send(Array(data[..<100_000]))
            #expect(try await upload.readFinal().final.status == 200)
            try await upload.head("GET", "/1/files/dropbox/d.bin", [("Authorization", "Bearer \(server.token)")])
            let received = await upload.readUntilClosed()
            #expect(received.count < 200_000)
            // The next connection is not dropped.
            let again = try await server.get("/1/files/dropbox/d.bin")
            #expect(again.body == Array(data[..<100_000]))
        }
    }

    @Test func throttlesAndStalls() async throws {
        try await TestServer.with({ configuration in
            var faults = FaultInjection()
            faults.throttleBytesPerSecond = 400_000
            faults.stallAfterBytes = 50_000
            faults.stallSeconds = 0.5
            configuration.faults = faults
        }) { server in
            let data = Bytes.pattern(200_000)
            #expect(try await server.put("/1/files_put/dropbox/t.bin", data).status == 200)
            let clock = ContinuousClock()
            let start = clock.now
            let reply = try await server.get("/1/files/dropbox/t.bin")
            let elapsed = clock.now - start
            #expect(reply.body == data)
            // 200 kB at 400 kB/s ≈ 0.5 s, plus the 0.5 s stall.
            #expect(elapsed >= .milliseconds(800), "took \(elapsed)")
            #expect(elapsed < .seconds(10))
        }
    }
}
