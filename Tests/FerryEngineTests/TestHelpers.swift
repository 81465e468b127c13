import FerryEngine
import FerryTestSupport
import Foundation
import Testing

func makeTemporaryDirectory() throws -> URL { try TestFiles.makeTemporaryDirectory() }
func sha256Hex(ofFile url: URL) throws -> String { try TestFiles.sha256Hex(ofFile: url) }
func sha256Hex(_ data: Data) -> String { TestFiles.sha256Hex(data) }

/// Runs `body` with a started TestHTTPServer and an engine, shutting both down after.
@discardableResult
func withServerAndEngine<T>(
    configure: (inout EngineConfiguration) -> Void = { _ in },
    sleeper: any Sleeper = ContinuousSleeper(),
    _ body: (TestHTTPServer, TransferEngine) async throws -> T
) async throws -> T {
    let server = try await TestHTTPServer.start()
    var configuration = EngineConfiguration()
    configure(&configuration)
    let engine = try TransferEngine(configuration: configuration, sleeper: sleeper)
    do {
        let value = try await body(server, engine)
        try await engine.shutdown()
        try await server.shutdown()
        return value
    } catch {
        try? await engine.shutdown()
        try? await server.shutdown()
        throw error
    }
}

func url(_ server: TestHTTPServer, _ path: String) -> URL {
    URL(string: server.baseURL + path)!
}

/// Records what the engine reports, for asserting order and totals.
final class RecordingObserver: TransferObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var _events: [String] = []
    private var _written: [(Int64, Int64, Int64)] = []
    private var _sent: [(Int64, Int64, Int64)] = []
    private var _resumedAt: [Int64] = []
    var refuseRedirects = false
    /// Cancels the transfer on its response (`transferDidReceive(response:)` says false).
    var refusesResponses = false

    var events: [String] { lock.withLock { _events } }
    var written: [(Int64, Int64, Int64)] { lock.withLock { _written } }
    var sent: [(Int64, Int64, Int64)] { lock.withLock { _sent } }
    var resumedAt: [Int64] { lock.withLock { _resumedAt } }

    func transferDidReceive(response: Response) async -> Bool {
        lock.withLock { _events.append("response \(response.statusCode)") }
        return !refusesResponses
    }
    func transferWillRedirect(response: Response, to request: Request) async -> Request? {
        lock.withLock { _events.append("redirect \(request.url.path)") }
        return refuseRedirects ? nil : request
    }
    func transferDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        lock.withLock { _sent.append((bytes, totalBytesSent, totalBytesExpectedToSend)) }
    }
    func transferDidWrite(bytes: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        lock.withLock { _written.append((bytes, totalBytesWritten, totalBytesExpectedToWrite)) }
    }
    func transferDidResume(atOffset offset: Int64, expectedTotal: Int64) {
        lock.withLock { _resumedAt.append(offset) }
    }
    func transferWillRetry(after delay: Duration, reason: String) {
        lock.withLock { _events.append("retry \(reason)") }
    }
}

/// Remembers the waits the engine asks for, and waits them for real.
final class RecordingSleeper: Sleeper, @unchecked Sendable {
    private let lock = NSLock()
    private var _requested: [Duration] = []
    var requested: [Duration] { lock.withLock { _requested } }
    func sleep(for duration: Duration) async throws {
        lock.withLock { _requested.append(duration) }
        try await Task.sleep(for: duration)
    }
}

/// Expects `body` to throw a FerryError with `code`; returns it.
@discardableResult
func expectFerryError<T>(_ code: FerryError.Code, _ body: () async throws -> T, sourceLocation: SourceLocation = #_sourceLocation) async -> FerryError? {
    do {
        _ = try await body()
        Issue.record("expected \(code), got success", sourceLocation: sourceLocation)
        return nil
    } catch let error as FerryError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected FerryError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
