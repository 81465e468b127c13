import Foundation
import GRDB

/// The schema's history. Each migration runs in one transaction and is never edited once
/// released: a change is a new migration appended below. Most are SQL.
enum Schema {
    /// Every migration, in the order they run: a new one goes at the end.
    static let migrations: [(String, @Sendable (Database) throws -> Void)] = [
        ("v1", sql(v1)), ("v2", sql(v2)), ("v3", sql(v3)), ("v4", sql(v4)), ("v5", sql(v5)), ("v6", sql(v6)),
        ("v7", sql(v7)), ("v8", sql(v8)), ("v9", sql(v9)), ("v10", sql(v10)), ("v11", sql(v11)), ("v12", sql(v12)),
        ("v13", sql(v13)), ("v14", v14),
    ]

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for (name, migrate) in migrations {
            migrator.registerMigration(name, migrate: migrate)
        }
        return migrator
    }

    private static func sql(_ text: String) -> @Sendable (Database) throws -> Void {
        { db in try db.execute(sql: text) }
    }

    static let v1 = """
        CREATE TABLE session (
            identifier TEXT PRIMARY KEY NOT NULL
                CONSTRAINT session_identifier_length CHECK (length(identifier) BETWEEN 1 AND 1024),
            app_bundle_identifier TEXT NOT NULL
                CONSTRAINT session_bundle_identifier_length CHECK (length(app_bundle_identifier) > 0),
            shared_container_identifier TEXT
                CONSTRAINT session_container_identifier_length CHECK (length(shared_container_identifier) > 0),
            last_task_identifier INTEGER NOT NULL DEFAULT 0
                CONSTRAINT session_last_task_identifier CHECK (last_task_identifier >= 0),
            created_at DOUBLE NOT NULL
        );

        CREATE TABLE task (
            session_identifier TEXT NOT NULL REFERENCES session(identifier) ON DELETE CASCADE,
            task_identifier INTEGER NOT NULL CONSTRAINT task_identifier_positive CHECK (task_identifier >= 1),
            kind TEXT NOT NULL CONSTRAINT task_kind CHECK (kind IN ('data', 'download', 'upload')),
            state TEXT NOT NULL
                CONSTRAINT task_state CHECK (state IN ('waiting', 'running', 'suspended', 'completed', 'failed', 'cancelled')),
            url TEXT NOT NULL CONSTRAINT task_url CHECK (length(url) > 0),
            method TEXT NOT NULL CONSTRAINT task_method CHECK (length(method) > 0),
            headers TEXT NOT NULL DEFAULT '[]' CONSTRAINT task_headers_json CHECK (json_valid(headers)),
            body_file TEXT,
            destination_file TEXT,
            bytes_sent INTEGER NOT NULL DEFAULT 0 CONSTRAINT task_bytes_sent CHECK (bytes_sent >= 0),
            bytes_received INTEGER NOT NULL DEFAULT 0 CONSTRAINT task_bytes_received CHECK (bytes_received >= 0),
            bytes_expected_to_send INTEGER CONSTRAINT task_bytes_expected_to_send CHECK (bytes_expected_to_send >= 0),
            bytes_expected_to_receive INTEGER
                CONSTRAINT task_bytes_expected_to_receive CHECK (bytes_expected_to_receive >= 0),
            resume_validator TEXT,
            resume_offset INTEGER CONSTRAINT task_resume_offset CHECK (resume_offset >= 0),
            upload_resource_url TEXT,
            upload_interop_version INTEGER CONSTRAINT task_upload_interop_version CHECK (upload_interop_version > 0),
            idempotency_key TEXT CONSTRAINT task_idempotency_key_length CHECK (length(idempotency_key) BETWEEN 1 AND 256),
            priority DOUBLE NOT NULL DEFAULT 0.5 CONSTRAINT task_priority_range CHECK (priority >= 0 AND priority <= 1),
            earliest_begin_date DOUBLE,
            attempt_count INTEGER NOT NULL DEFAULT 0 CONSTRAINT task_attempt_count CHECK (attempt_count >= 0),
            next_attempt_at DOUBLE,
            last_error_code TEXT,
            last_error_message TEXT,
            task_description TEXT,
            created_at DOUBLE NOT NULL,
            updated_at DOUBLE NOT NULL,
            PRIMARY KEY (session_identifier, task_identifier),
            CONSTRAINT task_idempotency_key_unique UNIQUE (session_identifier, idempotency_key),
            CONSTRAINT task_upload_needs_body CHECK (kind <> 'upload' OR body_file IS NOT NULL),
            CONSTRAINT task_resume_point CHECK ((resume_offset IS NULL) = (resume_validator IS NULL))
        );
        CREATE INDEX task_by_state ON task(state, priority DESC, created_at);

        CREATE TABLE event (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            session_identifier TEXT NOT NULL REFERENCES session(identifier) ON DELETE CASCADE,
            task_identifier INTEGER,
            kind TEXT NOT NULL CONSTRAINT event_kind CHECK (length(kind) > 0),
            payload TEXT NOT NULL CONSTRAINT event_payload_json CHECK (json_valid(payload)),
            created_at DOUBLE NOT NULL,
            FOREIGN KEY (session_identifier, task_identifier)
                REFERENCES task(session_identifier, task_identifier) ON DELETE CASCADE
        );
        CREATE INDEX event_by_session ON event(session_identifier, sequence);
        """

    /// ferryd's scheduling settings: per-task time-outs and why a retry waits, the session's
    /// per-host connection limit.
    static let v2 = """
        ALTER TABLE task ADD COLUMN resource_timeout DOUBLE
            CONSTRAINT task_resource_timeout CHECK (resource_timeout > 0);
        ALTER TABLE task ADD COLUMN request_timeout DOUBLE
            CONSTRAINT task_request_timeout CHECK (request_timeout > 0);
        ALTER TABLE task ADD COLUMN retry_reason TEXT
            CONSTRAINT task_retry_reason CHECK (retry_reason IN ('backoff', 'retryAfter'));
        ALTER TABLE session ADD COLUMN maximum_connections_per_host INTEGER NOT NULL DEFAULT 6
            CONSTRAINT session_maximum_connections_per_host CHECK (maximum_connections_per_host BETWEEN 1 AND 64);
        """

    /// When a waiting task may start, as an indexed column, so that finding runnable tasks
    /// and the next wake-up time reads an index range instead of every waiting task.
    static let v3 = """
        ALTER TABLE task ADD COLUMN runnable_at DOUBLE
            GENERATED ALWAYS AS (MAX(COALESCE(earliest_begin_date, 0), COALESCE(next_attempt_at, 0))) VIRTUAL;
        CREATE INDEX task_runnable ON task(state, runnable_at);
        """

    /// The session's retry policy, carried with each task (JSON; nil: ferryd's default).
    static let v4 = """
        ALTER TABLE task ADD COLUMN retry_policy TEXT
            CONSTRAINT task_retry_policy_json CHECK (retry_policy IS NULL OR json_valid(retry_policy));
        """

    /// The HTTP status of a completed task's response (`ferry list` shows an error status).
    static let v5 = """
        ALTER TABLE task ADD COLUMN response_status INTEGER
            CONSTRAINT task_response_status_range CHECK (response_status IS NULL OR response_status BETWEEN 100 AND 999);
        """

    /// What a session allows of the network (`NetworkAccess` as JSON; `{}`: anything).
    static let v6 = """
        ALTER TABLE session ADD COLUMN network_access TEXT NOT NULL DEFAULT '{}'
            CONSTRAINT session_network_access_json CHECK (json_valid(network_access));
        """

    /// Where ferryd delivers a finished download (`deliverTo`, absolute) and where it did
    /// (`delivered_to`: that path or the first free name beside it); sessions whose events
    /// ferryd acknowledges itself while nobody owns them (`keeps_events` 0). The `ferry` CLI's
    /// sessions (app `unregistered.ferry-cli`) made before this are such sessions too: nobody
    /// ever came back for their events.
    static let v7 = """
        ALTER TABLE task ADD COLUMN deliver_to TEXT
            CONSTRAINT task_deliver_to_absolute CHECK (deliver_to IS NULL OR substr(deliver_to, 1, 1) = '/');
        ALTER TABLE task ADD COLUMN delivered_to TEXT
            CONSTRAINT task_delivered_to_absolute CHECK (delivered_to IS NULL OR substr(delivered_to, 1, 1) = '/');
        ALTER TABLE session ADD COLUMN keeps_events INTEGER NOT NULL DEFAULT 1
            CONSTRAINT session_keeps_events CHECK (keeps_events IN (0, 1));
        UPDATE session SET keeps_events = 0 WHERE app_bundle_identifier = 'unregistered.ferry-cli';
        """

    /// How a session's transfers are made (`SessionTransferOptions` as JSON; `{}`: as standard).
    static let v8 = """
        ALTER TABLE session ADD COLUMN transfer_options TEXT NOT NULL DEFAULT '{}'
            CONSTRAINT session_transfer_options_json CHECK (json_valid(transfer_options));
        """

    /// Which tasks of a session have events (task lists say `eventsPending`), without reading
    /// all of the session's events.
    static let v9 = """
        CREATE INDEX event_by_task ON event(session_identifier, task_identifier);
        """

    /// `task_by_state` has served no query since `task_runnable` (v3): every insert and state
    /// change kept an index nobody read.
    static let v10 = """
        DROP INDEX task_by_state;
        """

    /// Whether ferryd starts the session's app for its events (`sessionSendsLaunchEvents`).
    static let v11 = """
        ALTER TABLE session ADD COLUMN sends_launch_events INTEGER NOT NULL DEFAULT 1
            CONSTRAINT session_sends_launch_events CHECK (sends_launch_events IN (0, 1));
        """

    /// A download's expected SHA-256 (`TaskOptions.expectedSHA256`).
    static let v12 = """
        ALTER TABLE task ADD COLUMN expected_sha256 TEXT
            CONSTRAINT task_expected_sha256 CHECK (expected_sha256 IS NULL OR length(expected_sha256) = 64);
        """

    /// What a task may answer a `401` with (`TaskSubmission.credentials`), JSON; NULL: none.
    static let v13 = """
        ALTER TABLE task ADD COLUMN credentials TEXT;
        """

    /// The task table's checks of `state` and `kind` as comparisons. Written as `IN` lists of
    /// six and three values, each made SQLite 3.40 build a temporary index whenever a row was
    /// inserted or its state changed (it compares lists of at most two directly): about 40% of
    /// a state change's time, paid by every submission, attempt and completion. The rows are
    /// unchanged and the rule is the same, so only the table's declaration is rewritten, by
    /// SQLite's documented procedure for changing a `CHECK` constraint
    /// (https://sqlite.org/lang_altertable.html, "Making other kinds of table schema changes").
    @Sendable static func v14(_ db: Database) throws {
        let rewrites = [
            ("state IN ('waiting', 'running', 'suspended', 'completed', 'failed', 'cancelled')",
             "state = 'waiting' OR state = 'running' OR state = 'suspended' OR state = 'completed' OR state = 'failed' OR state = 'cancelled'"),
            ("kind IN ('data', 'download', 'upload')", "kind = 'data' OR kind = 'download' OR kind = 'upload'"),
        ]
        let declaration = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'task'") ?? ""
        var rewritten = declaration
        for (list, comparisons) in rewrites {
            guard rewritten.contains(list) else {
                throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the task table does not declare `\(list)` as v1 wrote it")
            }
            rewritten = rewritten.replacingOccurrences(of: list, with: comparisons)
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
        try db.execute(sql: "PRAGMA writable_schema = ON")
        defer { try? db.execute(sql: "PRAGMA writable_schema = OFF") }
        do {
            try db.execute(
                sql: "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'task'", arguments: [rewritten])
        } catch {
            // An SQLite built to refuse schema edits (SQLITE_DBCONFIG_DEFENSIVE) keeps the lists:
            // the same rule, only slower. A store that cannot open would be worse.
            return
        }
        // Every connection reads the declaration again.
        try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
    }
}
