import Foundation
import GRDB

/// Migration v2: clubs. A namespace is a file tree that several accounts share (the
/// development account's is "the club" every added member joins); entries belong to a
/// namespace and name the account that last wrote them; access tokens move to a table of
/// SHA-256 digests so that an account can hold several and revoke them.
extension SQLiteStore {
    static func migrateToNamespaces(_ db: Database) throws {
        // Each v1 account becomes the first member of a namespace of its own (same id), which
        // takes over its revision counter; the development account's is named "club", as a
        // new one is.
        try db.execute(sql: """
            CREATE TABLE namespace (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                next_revision INTEGER NOT NULL DEFAULT 1,
                created_at DOUBLE NOT NULL
            );
            INSERT INTO namespace (id, name, next_revision, created_at)
                SELECT id, CASE WHEN name = 'dev' THEN 'club' ELSE name END, next_revision, created_at FROM account;

            CREATE TABLE new_account (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                namespace_id INTEGER NOT NULL REFERENCES namespace(id),
                app_key TEXT NOT NULL,
                app_secret TEXT NOT NULL,
                client_id TEXT NOT NULL UNIQUE,
                dev_access_token TEXT UNIQUE,
                created_at DOUBLE NOT NULL
            );
            INSERT INTO new_account (id, name, namespace_id, app_key, app_secret, client_id, dev_access_token, created_at)
                SELECT id,
                       name || CASE WHEN id = (SELECT MIN(a.id) FROM account a WHERE a.name = account.name) THEN '' ELSE '-' || id END,
                       id, app_key, app_secret, client_id, access_token, created_at
                FROM account;
            DROP TABLE account;
            ALTER TABLE new_account RENAME TO account;
            CREATE INDEX account_namespace ON account(namespace_id);

            CREATE TABLE access_token (
                id INTEGER PRIMARY KEY,
                account_id INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                token_sha256 TEXT NOT NULL UNIQUE,
                origin TEXT NOT NULL,
                created_at DOUBLE NOT NULL,
                revoked_at DOUBLE
            );
            CREATE INDEX access_token_account ON access_token(account_id);

            CREATE TABLE new_entry (
                id INTEGER PRIMARY KEY,
                namespace_id INTEGER NOT NULL REFERENCES namespace(id) ON DELETE CASCADE,
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
                modifier_id INTEGER REFERENCES account(id) ON DELETE SET NULL,
                modifier_name TEXT,
                UNIQUE (namespace_id, path_lower),
                CHECK (is_dir OR blob IS NOT NULL)
            );
            INSERT INTO new_entry (id, namespace_id, path_lower, path_display, parent_lower, is_dir, bytes, revision,
                                   blob, sha256, mime_type, modified, modifier_id, modifier_name)
                SELECT id, account_id, path_lower, path_display, parent_lower, is_dir, bytes, revision,
                       blob, sha256, mime_type, modified, account_id, (SELECT name FROM account WHERE account.id = entry.account_id)
                FROM entry;
            DROP TABLE entry;
            ALTER TABLE new_entry RENAME TO entry;
            CREATE INDEX entry_parent ON entry(namespace_id, parent_lower);
            """)
        // The v1 tokens, digested here: SQLite has no SHA-256 of its own.
        let tokens = try Row.fetchAll(db, sql: "SELECT id, dev_access_token, created_at FROM account WHERE dev_access_token IS NOT NULL")
        for row in tokens {
            var token = AccessToken(
                id: nil, accountId: row["id"], tokenSha256: AccessToken.digest(row["dev_access_token"]),
                origin: AccessToken.Origin.development, createdAt: row["created_at"], revokedAt: nil)
            try token.insert(db)
        }
    }
}
