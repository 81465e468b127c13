import Foundation
import Logging
import PostgresNIO

/// The shared ``MetadataStore``: the same tables as ``SQLiteStore`` in a PostgreSQL database
/// (postgres-nio), so that several byteclub-server instances serve one club. Queries go through
/// a bounded pool (`--database-pool-size`), whose task runs from ``open(_:poolSize:longPollWaiterLimit:logger:)``
/// to ``close()``.
///
/// Tree writes lock their namespace's row first (`SELECT … FOR UPDATE`): the revision and
/// journal counters live there, so writes to one namespace take turns across instances, as
/// SQLite's single writer makes them within one, and a compared `parent_rev` is the one replaced.
final class PostgresStore: Sendable {
    let client: PostgresClient
    let changes: ChangeNotifier
    let logger: Logger
    let url: DatabaseURL
    /// The pool's `run()`: cancelled by ``close()``, which waits until every connection closed.
    private let runner: Task<Void, Never>

    private init(client: PostgresClient, url: DatabaseURL, longPollWaiterLimit: Int, logger: Logger) {
        self.client = client
        self.url = url
        self.logger = logger
        changes = ChangeNotifier(capacity: longPollWaiterLimit)
        runner = Task { await client.run() }
    }

    /// Connects once (a bad URL, password or database fails here, with a ``DatabaseURLError``),
    /// then starts the pool and brings the schema up to date.
    static func open(_ url: DatabaseURL, poolSize: Int, longPollWaiterLimit: Int, logger: Logger) async throws -> PostgresStore {
        try await probe(url, logger: logger)
        let store = PostgresStore(
            client: PostgresClient(configuration: try url.clientConfiguration(poolSize: poolSize), backgroundLogger: logger),
            url: url, longPollWaiterLimit: longPollWaiterLimit, logger: logger)
        do {
            try await PostgresSchema.migrate(store)
        } catch {
            await store.close()
            throw error
        }
        logger.info("metadata in PostgreSQL", metadata: ["database": "\(url)", "pool": "\(poolSize)"])
        return store
    }

    /// One plain connection before the pool: the pool would retry an unreachable server for
    /// ever, where an operator wants to be told at start what is wrong.
    private static func probe(_ url: DatabaseURL, logger: Logger) async throws {
        do {
            let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 0, logger: logger)
            try await connection.close()
        } catch let error as PSQLError {
            let reason = error.serverInfo?[.message] ?? "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
            throw DatabaseURLError("cannot use the PostgreSQL database \(url): \(reason)")
        } catch {
            throw DatabaseURLError("cannot use the PostgreSQL database \(url): \(error)")
        }
    }

    func close() async {
        runner.cancel()
        await runner.value
    }

    // MARK: Running queries

    /// `body` on one pooled connection, outside a transaction (each statement sees the latest commits).
    func read<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { connection in try await body(connection) }
    }

    /// `body` in one transaction (READ COMMITTED); rolled back when it throws, whose error is
    /// rethrown as it was (an ``APIError`` stays one).
    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            do {
                let result = try await body(connection)
                try await connection.query("COMMIT", logger: logger)
                return result
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }
}

extension PostgresConnection {
    /// Every row of `query`, each readable by column name.
    func rows(_ query: PostgresQuery, _ logger: Logger) async throws -> [PostgresRandomAccessRow] {
        try await self.query(query, logger: logger).collect().map { $0.makeRandomAccess() }
    }

    /// The first row of `query`, if any.
    func row(_ query: PostgresQuery, _ logger: Logger) async throws -> PostgresRandomAccessRow? {
        try await rows(query, logger).first
    }

    /// Runs a statement whose rows (if any) do not matter.
    func run(_ query: PostgresQuery, _ logger: Logger) async throws {
        _ = try await self.query(query, logger: logger).collect()
    }
}

extension PostgresRandomAccessRow {
    /// The value of `column`, decoded as `T` (`T?` for a column that may be NULL).
    func get<T: PostgresDecodable>(_ column: String, _ type: T.Type = T.self) throws -> T {
        try self[column].decode(T.self)
    }
}

extension Entry {
    init(_ row: PostgresRandomAccessRow) throws {
        self.init(
            id: try row.get("id"), namespaceId: try row.get("namespace_id"), pathLower: try row.get("path_lower"),
            pathDisplay: try row.get("path_display"), parentLower: try row.get("parent_lower"), isDir: try row.get("is_dir"),
            bytes: try row.get("bytes"), revision: try row.get("revision"), blob: try row.get("blob"), sha256: try row.get("sha256"),
            mimeType: try row.get("mime_type"), modified: try row.get("modified"), modifierId: try row.get("modifier_id"),
            modifierName: try row.get("modifier_name"))
    }
}

extension Account {
    init(_ row: PostgresRandomAccessRow) throws {
        self.init(
            id: try row.get("id"), name: try row.get("name"), namespaceId: try row.get("namespace_id"), appKey: try row.get("app_key"),
            appSecret: try row.get("app_secret"), clientId: try row.get("client_id"), devAccessToken: try row.get("dev_access_token"),
            createdAt: try row.get("created_at"))
    }
}

extension ImageRecord {
    init(_ row: PostgresRandomAccessRow) throws {
        self.init(
            id: try row.get("id"), accountId: try row.get("account_id"), deletehash: try row.get("deletehash"),
            title: try row.get("title"), description: try row.get("description"), mimeType: try row.get("mime_type"),
            width: try row.get("width"), height: try row.get("height"), bytes: try row.get("bytes"),
            datetime: try row.get("datetime"), blob: try row.get("blob"))
    }
}

extension BinRequest {
    init(_ row: PostgresRandomAccessRow) throws {
        self.init(
            id: try row.get("id"), binId: try row.get("bin_id"), method: try row.get("method"), path: try row.get("path"),
            query: try row.get("query"), headers: try row.get("headers"), body: try row.get("body"), bodyBytes: try row.get("body_bytes"),
            truncated: try row.get("truncated"), remoteAddr: try row.get("remote_addr"), time: try row.get("time"))
    }
}
