import FerryTestSupport
import Testing

/// Where a test server keeps its metadata: the data directory's SQLite file, or a fresh
/// database on the suite's PostgreSQL server (``PostgresScope``). Tests that take it as an
/// argument run once on each, so both stores are held to the same behaviour.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// A suite trait: one real PostgreSQL server (``PostgresServer``: initdb, pg_ctl, a free port
/// on 127.0.0.1) for the whole suite, stopped and removed when the suite ends, failed or not.
/// Tests reach it through ``current``.
///
/// ```swift
/// @Suite(.postgres) struct ConflictTests {
///     @Test(arguments: Backend.allCases) func save(backend: Backend) async throws {
///         try await TestServer.with(backend: backend) { server in … }
///     }
/// }
/// ```
struct PostgresScope: SuiteTrait, TestScoping {
    @TaskLocal static var current: PostgresServer?

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let server = try await PostgresServer.start()
        do {
            try await Self.$current.withValue(server) { try await function() }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// A new database on the suite's server, as a URL.
    static func createDatabase() async throws -> String {
        guard let server = current else { throw TestFailure("a PostgreSQL test runs in a suite marked @Suite(.postgres)") }
        return try await server.createDatabase()
    }
}

extension Trait where Self == PostgresScope {
    /// Starts a PostgreSQL server for the suite (see ``PostgresScope``).
    static var postgres: Self { PostgresScope() }
}
