import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL schema as versioned migrations: `schema_version` records each step applied;
/// each step runs in its own transaction under an advisory lock, so two instances starting at
/// once migrate once. Never edit a released step: add the next one.
enum PostgresSchema {
    /// `pg_advisory_xact_lock` keys: migrations, and account creation (two instances starting
    /// at once must not both create the development account).
    static let migrationLock: Int64 = 0x6279_7465_636c_7562  // "byteclub"
    static let accountsLock: Int64 = 0x6279_7465_6163_6374  // "byteacct"

    /// Step 1 is the SQLite store's v1–v3 as they stand: namespaces with their revision and
    /// journal counters, accounts, hashed tokens, entries, the journal, images, bins, chunked uploads.
    static let steps: [(version: Int, statements: [String])] = [
        (1, [
            """
            CREATE TABLE namespace (
                id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL,
                next_revision BIGINT NOT NULL DEFAULT 1, next_sequence BIGINT NOT NULL DEFAULT 1,
                created_at DOUBLE PRECISION NOT NULL)
            """,
            """
            CREATE TABLE account (
                id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, namespace_id BIGINT NOT NULL REFERENCES namespace(id),
                app_key TEXT NOT NULL, app_secret TEXT NOT NULL, client_id TEXT NOT NULL UNIQUE,
                dev_access_token TEXT UNIQUE, created_at DOUBLE PRECISION NOT NULL)
            """,
            "CREATE INDEX account_namespace ON account(namespace_id)",
            """
            CREATE TABLE access_token (
                id BIGSERIAL PRIMARY KEY, account_id BIGINT NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                token_sha256 TEXT NOT NULL UNIQUE, origin TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL, revoked_at DOUBLE PRECISION)
            """,
            "CREATE INDEX access_token_account ON access_token(account_id)",
            """
            CREATE TABLE entry (
                id BIGSERIAL PRIMARY KEY, namespace_id BIGINT NOT NULL REFERENCES namespace(id) ON DELETE CASCADE,
                path_lower TEXT NOT NULL, path_display TEXT NOT NULL, parent_lower TEXT NOT NULL, is_dir BOOLEAN NOT NULL,
                bytes BIGINT NOT NULL DEFAULT 0 CHECK (bytes >= 0), revision BIGINT NOT NULL,
                blob TEXT, sha256 TEXT, mime_type TEXT, modified DOUBLE PRECISION NOT NULL,
                modifier_id BIGINT REFERENCES account(id) ON DELETE SET NULL, modifier_name TEXT,
                UNIQUE (namespace_id, path_lower), CHECK (is_dir OR blob IS NOT NULL))
            """,
            "CREATE INDEX entry_parent ON entry(namespace_id, parent_lower)",
            """
            CREATE TABLE change_journal (
                namespace_id BIGINT NOT NULL REFERENCES namespace(id) ON DELETE CASCADE, sequence BIGINT NOT NULL,
                path_lower TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('put', 'delete', 'move', 'create_folder')),
                time DOUBLE PRECISION NOT NULL, PRIMARY KEY (namespace_id, sequence))
            """,
            """
            CREATE TABLE chunked_upload (
                id TEXT PRIMARY KEY, account_id BIGINT NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                "offset" BIGINT NOT NULL DEFAULT 0, expires DOUBLE PRECISION NOT NULL)
            """,
            """
            CREATE TABLE image (
                id TEXT PRIMARY KEY, account_id BIGINT NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                deletehash TEXT NOT NULL UNIQUE, title TEXT, description TEXT, mime_type TEXT NOT NULL,
                width BIGINT NOT NULL, height BIGINT NOT NULL, bytes BIGINT NOT NULL, datetime BIGINT NOT NULL, blob TEXT NOT NULL)
            """,
            "CREATE INDEX image_account ON image(account_id)",
            "CREATE TABLE bin (id TEXT PRIMARY KEY, created DOUBLE PRECISION NOT NULL)",
            """
            CREATE TABLE bin_request (
                id BIGSERIAL PRIMARY KEY, bin_id TEXT NOT NULL REFERENCES bin(id) ON DELETE CASCADE,
                method TEXT NOT NULL, path TEXT NOT NULL, query TEXT, headers TEXT NOT NULL, body BYTEA,
                body_bytes BIGINT NOT NULL, truncated BOOLEAN NOT NULL, remote_addr TEXT, time DOUBLE PRECISION NOT NULL)
            """,
            "CREATE INDEX bin_request_bin ON bin_request(bin_id, id)",
        ]),
        // Step 2 is the SQLite store's v4: OAuth clients and their redirect URIs (the Byte Club
        // app registered), pending consents and authorization codes (see ``OAuthStore``).
        (2, [
            "CREATE TABLE oauth_client (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)",
            """
            CREATE TABLE oauth_redirect_uri (
                client_id TEXT NOT NULL REFERENCES oauth_client(id) ON DELETE CASCADE, uri TEXT NOT NULL,
                PRIMARY KEY (client_id, uri))
            """,
            """
            CREATE TABLE oauth_consent (
                token_sha256 TEXT PRIMARY KEY, account_id BIGINT NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                client_id TEXT NOT NULL REFERENCES oauth_client(id) ON DELETE CASCADE, redirect_uri TEXT NOT NULL,
                state TEXT, code_challenge TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
            """,
            """
            CREATE TABLE oauth_code (
                code_sha256 TEXT PRIMARY KEY, account_id BIGINT NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                client_id TEXT NOT NULL REFERENCES oauth_client(id) ON DELETE CASCADE, redirect_uri TEXT NOT NULL,
                code_challenge TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL,
                used_at DOUBLE PRECISION, access_token_id BIGINT REFERENCES access_token(id) ON DELETE SET NULL)
            """,
            "CREATE INDEX oauth_code_expires ON oauth_code(expires_at)",
            "CREATE INDEX oauth_consent_expires ON oauth_consent(expires_at)",
            // Literals, not OAuthRules' constants: a step says what it did, whatever they become.
            "INSERT INTO oauth_client (id, name, created_at) VALUES ('byteclub', 'Byte Club', EXTRACT(EPOCH FROM now())::DOUBLE PRECISION)",
            "INSERT INTO oauth_redirect_uri (client_id, uri) VALUES ('byteclub', 'http://127.0.0.1/callback'), ('byteclub', 'http://[::1]/callback')",
        ]),
    ]

    /// Applies the steps the database has not had yet. A database migrated by a newer server
    /// (a step this one does not know) is refused rather than used.
    static func migrate(_ store: PostgresStore) async throws {
        let logger = store.logger
        let latest = steps.last?.version ?? 0
        var applied = try await store.transaction { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(\(migrationLock))", logger)
            try await connection.run(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)", logger)
            return try await version(connection, logger)
        }
        if applied > latest {
            throw DatabaseURLError("the database \(store.url) has schema version \(applied), newer than this byteclub-server's \(latest): upgrade the server")
        }
        for step in steps where step.version > applied {
            applied = try await store.transaction { connection in
                try await connection.run("SELECT pg_advisory_xact_lock(\(migrationLock))", logger)
                // Another instance may have applied it while this one waited for the lock.
                guard try await version(connection, logger) < step.version else { return step.version }
                for statement in step.statements { try await connection.run(PostgresQuery(unsafeSQL: statement), logger) }
                try await connection.run(
                    "INSERT INTO schema_version (version, applied_at) VALUES (\(step.version), \(Date().timeIntervalSince1970))", logger)
                logger.notice("migrated the PostgreSQL schema", metadata: ["version": "\(step.version)"])
                return step.version
            }
        }
    }

    private static func version(_ connection: PostgresConnection, _ logger: Logger) async throws -> Int {
        try await connection.row("SELECT COALESCE(MAX(version), 0) AS version FROM schema_version", logger)?.get("version", Int.self) ?? 0
    }
}
