import Foundation
import GRDB

/// Images, chunked uploads and request bins in SQLite: rows the routes once wrote themselves.
extension SQLiteStore: UploadStore, BinStore {
    func insertImage(_ record: ImageRecord) async throws {
        try await pool.write { db in try record.insert(db) }
    }

    func image(id: String) async throws -> ImageRecord? {
        try await pool.read { db in try ImageRecord.fetchOne(db, key: id) }
    }

    func deleteImage(key: String, account: Int64) async throws -> ImageRecord? {
        try await pool.write { db -> ImageRecord? in
            let record = try ImageRecord.filter(Column("deletehash") == key).fetchOne(db)
                ?? ImageRecord.filter(Column("id") == key && Column("account_id") == account).fetchOne(db)
            if let record { try record.delete(db) }
            return record
        }
    }

    func images(account: Int64, limit: Int) async throws -> [ImageRecord] {
        try await pool.read { db in
            try ImageRecord.filter(Column("account_id") == account).order(Column("datetime").desc).limit(limit).fetchAll(db)
        }
    }

    func createChunkedUpload(id: String, account: Int64, expires: Double) async throws {
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO chunked_upload (id, account_id, \"offset\", expires) VALUES (?, ?, 0, ?)",
                           arguments: [id, account, expires])
        }
    }

    func chunkedUpload(id: String, account: Int64) async throws -> (offset: Int64, expires: Double)? {
        // Rows are not Sendable: read the columns inside, so the read runs off this thread.
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT \"offset\", expires FROM chunked_upload WHERE id = ? AND account_id = ?", arguments: [id, account])
                .map { ($0["offset"] as Int64, $0["expires"] as Double) }
        }
    }

    func setChunkedUploadOffset(id: String, offset: Int64) async throws {
        try await pool.write { db in
            try db.execute(sql: "UPDATE chunked_upload SET \"offset\" = ? WHERE id = ?", arguments: [offset, id])
        }
    }

    func removeChunkedUpload(id: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM chunked_upload WHERE id = ?", arguments: [id])
        }
    }

    func createBin(id: String, created: Double) async throws {
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO bin (id, created) VALUES (?, ?)", arguments: [id, created])
        }
    }

    func binExists(_ id: String) async throws -> Bool {
        try await pool.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM bin WHERE id = ?", arguments: [id]) } != nil
    }

    func record(_ request: BinRequest, keep: Int) async throws -> Int64 {
        try await pool.write { db -> Int64 in
            var row = request
            try row.insert(db)
            try db.execute(sql: """
                DELETE FROM bin_request WHERE bin_id = ? AND id NOT IN
                  (SELECT id FROM bin_request WHERE bin_id = ? ORDER BY id DESC LIMIT ?)
                """, arguments: [request.binId, request.binId, keep])
            return row.id ?? 0
        }
    }

    func requests(bin: String) async throws -> [BinRequest] {
        try await pool.read { db in
            try BinRequest.filter(Column("bin_id") == bin).order(Column("id").desc).fetchAll(db)
        }
    }

    func binSummaries(limit: Int) async throws -> [BinSummary] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT bin.id AS id, bin.created AS created, COUNT(bin_request.id) AS count
                FROM bin LEFT JOIN bin_request ON bin_request.bin_id = bin.id GROUP BY bin.id ORDER BY bin.created DESC LIMIT ?
                """, arguments: [limit]).map { BinSummary(id: $0["id"], count: $0["count"]) }
        }
    }
}

extension SQLiteStore: MetadataStore {
    func referencedBlobs() async throws -> Set<String> {
        try await pool.read { db in
            Set(try String.fetchAll(db, sql: "SELECT blob FROM entry WHERE blob IS NOT NULL UNION SELECT blob FROM image"))
        }
    }

    func close() async {
        try? pool.close()
    }
}
