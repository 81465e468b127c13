import Foundation
import Testing

/// Requests one after another on kept-alive connections, each sent the moment the previous
/// answer's last byte (by its Content-Length) arrived: before the server's own end of that
/// answer may have gone through its pipeline. A second answer started before the first one's
/// end crashed the server (NIO's HTTPServerProtocolErrorHandler precondition) until the HTTP/1
/// pipeline held each next request back until the answer before it had ended.
@Suite("Kept-alive connections")
struct KeepAliveTests {
    @Test("back-to-back requests on four kept-alive connections are answered in order, and the server lives")
    func backToBack() async throws {
        try await TestServer.with { server in
            #expect(try await server.put("/1/files_put/dropbox/byteclub/tiny.txt", Array("hello".utf8)).status == 200)
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        let connection = try RawHTTP(port: server.port, timeoutSeconds: 10)
                        var answered = 0
                        for round in 0..<400 {
                            let path = round % 2 == 0 ? "/1/files/dropbox/byteclub/tiny.txt" : "/1/metadata/dropbox/byteclub"
                            try await connection.head("GET", path, [("Authorization", "Bearer \(server.token)")])
                            let response = try await connection.readResponse()
                            if response.status == 200 { answered += 1 }
                        }
                        return answered
                    }
                }
                for try await answered in group { #expect(answered == 400) }
            }
            #expect(try await server.request(.GET, "/1/metadata/dropbox/byteclub").status == 200, "the server still answers")
        }
    }
}
