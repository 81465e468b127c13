import Foundation
import Testing

/// `Expect: 100-continue` (curl sends it with every upload over 1 MiB) is answered with
/// `100 Continue` before the body is sent, not after the client's own timeout.
@Suite("Expect: 100-continue")
struct ExpectContinueTests {
    @Test func hundredContinueComesBeforeTheBody() async throws {
        try await TestServer.with { server in
            let body = Bytes.pattern(3 << 20, seed: 9)
            let connection = try RawHTTP(port: server.port, timeoutSeconds: 20)
            try await connection.head("PUT", "/1/files_put/dropbox/expect.bin", [
                ("Authorization", "Bearer \(server.token)"), ("Content-Length", "\(body.count)"), ("Expect", "100-continue"),
            ])
            let started = ContinuousClock.now
            let interim = try await connection.readResponse()
            #expect(interim.status == 100)
            // Without it the read above times out (20 s); the bound is loose for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(10), "at once, not after a client's timeout")
            try await connection.send(body)
            let final = try await connection.readFinal()
            #expect(final.informational.isEmpty)
            #expect(final.final.status == 200)
            #expect(try await server.get("/1/files/dropbox/expect.bin").body == body)

            // Without Expect, no interim answer.
            let plain = try RawHTTP(port: server.port, timeoutSeconds: 5)
            try await plain.head("PUT", "/1/files_put/dropbox/plain.txt", [("Authorization", "Bearer \(server.token)"), ("Content-Length", "2")])
            try await plain.send("ok")
            let answer = try await plain.readFinal()
            #expect(answer.informational.isEmpty)
            #expect(answer.final.status == 200)
        }
    }
}
