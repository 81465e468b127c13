import Foundation
import GRDB

/// The embedded ``MetadataStore``: one SQLite database (GRDB, WAL) in the data directory holding
/// namespaces, accounts and their tokens, OAuth clients, consents and codes, file entries, the
/// change journal, images, bins and chunked uploads. File bodies live in ``BlobStore``; a row is
/// written only after its blob is durable. Several processes on one machine may open it at once
/// (the server, the `accounts` and `clients` subcommands): nothing read from it is cached
/// across requests.
final class SQLiteStore: Sendable {
    let pool: DatabasePool
    /// Wakes this process's long-poll waiters when a write to their namespace commits.
    let changes: ChangeNotifier

    init(path: String, longPollWaiterLimit: Int = 1000) throws {
        changes = ChangeNotifier(capacity: longPollWaiterLimit)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    /// Migrations, in SQL, never edited once released: add a new one instead.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE account (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    app_key TEXT NOT NULL UNIQUE,
                    app_secret TEXT NOT NULL,
                    access_token TEXT NOT NULL UNIQUE,
                    client_id TEXT NOT NULL UNIQUE,
                    quota_bytes INTEGER NOT NULL CHECK (quota_bytes >= 0),
                    next_revision INTEGER NOT NULL DEFAULT 1,
                    created_at DOUBLE NOT NULL
                );
                CREATE TABLE entry (
                    id INTEGER PRIMARY KEY,
                    account_id INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    path_lower TEXT NOT NULL,
                    path_display TEXT NOT NULL,
                    parent_lower TEXT NOT NULL,
                    is_dir BOOLEAN NOT NULL,
                    bytes INTEGER NOT NULL DEFAULT 0 CHECK (bytes >= 0),
                    revision INTEGER NOT NULL,
                    blob TEXT,
                    sha256 TEXT,
                    mime_type TEXT,
                    modified DOUBLE NOT NULL,
                    UNIQUE (account_id, path_lower),
                    CHECK (is_dir OR blob IS NOT NULL)
                );
                CREATE INDEX entry_parent ON entry(account_id, parent_lower);
                CREATE TABLE chunked_upload (
                    id TEXT PRIMARY KEY,
                    account_id INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    "offset" INTEGER NOT NULL DEFAULT 0,
                    expires DOUBLE NOT NULL
                );
                CREATE TABLE image (
                    id TEXT PRIMARY KEY,
                    account_id INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    deletehash TEXT NOT NULL UNIQUE,
                    title TEXT,
                    description TEXT,
                    mime_type TEXT NOT NULL,
                    width INTEGER NOT NULL,
                    height INTEGER NOT NULL,
                    bytes INTEGER NOT NULL,
                    datetime INTEGER NOT NULL,
                    blob TEXT NOT NULL
                );
                CREATE TABLE bin (
                    id TEXT PRIMARY KEY,
                    created DOUBLE NOT NULL
                );
                CREATE TABLE bin_request (
                    id INTEGER PRIMARY KEY,
                    bin_id TEXT NOT NULL REFERENCES bin(id) ON DELETE CASCADE,
                    method TEXT NOT NULL,
                    path TEXT NOT NULL,
                    query TEXT,
                    headers TEXT NOT NULL,
                    body BLOB,
                    body_bytes INTEGER NOT NULL,
                    truncated BOOLEAN NOT NULL,
                    remote_addr TEXT,
                    time DOUBLE NOT NULL
                );
                CREATE INDEX bin_request_bin ON bin_request(bin_id, id);
                """)
        }
        migrator.registerMigration("v2", migrate: Self.migrateToNamespaces)
        migrator.registerMigration("v3", migrate: Self.migrateToJournal)
        migrator.registerMigration("v4", migrate: Self.migrateToOAuth)
        return migrator
    }
}
