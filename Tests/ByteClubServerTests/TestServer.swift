import AsyncHTTPClient
import ByteClubServer
import Crypto
import FerryTestSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Testing

/// A real byteclub-server in this process: a fresh data directory (and with `.postgres` a fresh
/// database on the suite's PostgreSQL), port 0 on 127.0.0.1, the dev account with known
/// credentials. `with { server in … }` runs a body against it and stops it afterwards.
struct TestServer: Sendable {
    let base: String
    let port: Int
    let token: String
    let clientID: String
    let appKey: String
    let dataDirectory: String
    /// The PostgreSQL database's URL with the `.postgres` backend; `nil` with SQLite.
    let databaseURL: String?

    static let client = HTTPClient.shared

    static func with<T: Sendable>(
        backend: Backend = .sqlite,
        _ configure: @Sendable (inout ByteClubConfiguration) -> Void = { _ in },
        _ body: @Sendable (TestServer) async throws -> T
    ) async throws -> T {
        let directory = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = ByteClubConfiguration()
        configuration.port = 0
        configuration.dataDirectory = directory
        configuration.devCredentials = DevCredentials(appKey: "testapp", accessToken: "test-token", clientID: "test-client")
        if backend == .postgres { configuration.databaseURL = try await PostgresScope.createDatabase() }
        configure(&configuration)
        var logger = Logger(label: "byteclub-test")
        logger.logLevel = .warning
        let server = try await ByteClubServer(configuration: configuration, logger: logger)
        let databaseURL = configuration.databaseURL
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await server.run { port in continuation.yield(port) }
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TestFailure("server did not start") }
            let account = server.devAccount
            let test = TestServer(base: "http://127.0.0.1:\(port)", port: port, token: account.accessToken,
                                  clientID: account.clientID, appKey: account.appKey, dataDirectory: directory,
                                  databaseURL: databaseURL)
            defer { group.cancelAll() }
            return try await body(test)
        }
    }

    /// The upload temp files in a data directory: every server instance's folder under
    /// `files/tmp`, their lock files aside.
    static func tempFiles(_ dataDirectory: String) -> [String] {
        let tmp = dataDirectory + "/files/tmp"
        return ((try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []).flatMap { instance -> [String] in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: tmp + "/" + instance)) ?? [instance]
            return names.filter { $0 != "lock" }.map { instance + "/" + $0 }
        }
    }

    static func makeTempDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("byteclub-test-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    // MARK: Requests

    struct Reply: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(body)) }
        var object: [String: Any] { json as? [String: Any] ?? [:] }
        func header(_ name: String) -> String? { headers.first(name: name) }
    }

    /// Sends one request and reads the whole answer (bounded at 300 MiB).
    /// `client`: another HTTPClient (one that does not follow redirects, say).
    func request(_ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                 auth: Bool = true, client: HTTPClient = Self.client) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if auth { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: .seconds(60))
        let collected = try await response.body.collect(upTo: 300 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Array(buffer: collected))
    }

    func get(_ path: String, headers: [(String, String)] = [], auth: Bool = true) async throws -> Reply {
        try await request(.GET, path, headers: headers, auth: auth)
    }

    func put(_ path: String, _ body: [UInt8], headers: [(String, String)] = []) async throws -> Reply {
        try await request(.PUT, path, headers: headers, body: body)
    }

    func post(_ path: String, form: [String: String] = [:], headers: [(String, String)] = [], auth: Bool = true) async throws -> Reply {
        let body = form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
        return try await request(.POST, path, headers: headers + [("Content-Type", "application/x-www-form-urlencoded")], body: Array(body.utf8), auth: auth)
    }
}

/// Deterministic test bytes and their digest.
enum Bytes {
    static func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var x = UInt32(seed) &* 2_654_435_761 | 1
        for i in 0..<count {
            x ^= x << 13; x ^= x >> 17; x ^= x << 5
            out[i] = UInt8(truncatingIfNeeded: x)
        }
        return out
    }

    static func sha256(_ bytes: some Sequence<UInt8>) -> String {
        SHA256.hash(data: Array(bytes)).map { String(format: "%02x", $0) }.joined()
    }
}
