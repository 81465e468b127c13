import Foundation
import Logging
import PostgresNIO

/// Images, chunked uploads and request bins in PostgreSQL.
extension PostgresStore: UploadStore, BinStore {
    func insertImage(_ record: ImageRecord) async throws {
        try await read { connection in
            try await connection.run("""
                INSERT INTO image (id, account_id, deletehash, title, description, mime_type, width, height, bytes, datetime, blob)
                VALUES (\(record.id), \(record.accountId), \(record.deletehash), \(record.title), \(record.description), \(record.mimeType),
                        \(record.width), \(record.height), \(record.bytes), \(record.datetime), \(record.blob))
                """, logger)
        }
    }

    func image(id: String) async throws -> ImageRecord? {
        try await read { connection in try await connection.row("SELECT * FROM image WHERE id = \(id)", logger).map(ImageRecord.init) }
    }

    func deleteImage(key: String, account: Int64) async throws -> ImageRecord? {
        try await read { connection in
            // One statement: the deletehash's image, else the account's own image of that id.
            try await connection.row("""
                DELETE FROM image WHERE id = COALESCE(
                    (SELECT id FROM image WHERE deletehash = \(key)), (SELECT id FROM image WHERE id = \(key) AND account_id = \(account)))
                RETURNING *
                """, logger).map(ImageRecord.init)
        }
    }

    func images(account: Int64, limit: Int) async throws -> [ImageRecord] {
        try await read { connection in
            try await connection.rows("SELECT * FROM image WHERE account_id = \(account) ORDER BY datetime DESC LIMIT \(limit)", logger)
                .map(ImageRecord.init)
        }
    }

    func createChunkedUpload(id: String, account: Int64, expires: Double) async throws {
        try await read { connection in
            try await connection.run("INSERT INTO chunked_upload (id, account_id, \"offset\", expires) VALUES (\(id), \(account), 0, \(expires))", logger)
        }
    }

    func chunkedUpload(id: String, account: Int64) async throws -> (offset: Int64, expires: Double)? {
        try await read { connection in
            try await connection.row("SELECT \"offset\", expires FROM chunked_upload WHERE id = \(id) AND account_id = \(account)", logger)
                .map { (try $0.get("offset", Int64.self), try $0.get("expires", Double.self)) }
        }
    }

    func setChunkedUploadOffset(id: String, offset: Int64) async throws {
        try await read { connection in try await connection.run("UPDATE chunked_upload SET \"offset\" = \(offset) WHERE id = \(id)", logger) }
    }

    func removeChunkedUpload(id: String) async throws {
        try await read { connection in try await connection.run("DELETE FROM chunked_upload WHERE id = \(id)", logger) }
    }

    func createBin(id: String, created: Double) async throws {
        try await read { connection in try await connection.run("INSERT INTO bin (id, created) VALUES (\(id), \(created))", logger) }
    }

    func binExists(_ id: String) async throws -> Bool {
        try await read { connection in try await connection.row("SELECT 1 AS one FROM bin WHERE id = \(id)", logger) != nil }
    }

    func record(_ request: BinRequest, keep: Int) async throws -> Int64 {
        try await transaction { connection in
            let id = try await connection.row("""
                INSERT INTO bin_request (bin_id, method, path, query, headers, body, body_bytes, truncated, remote_addr, time)
                VALUES (\(request.binId), \(request.method), \(request.path), \(request.query), \(request.headers), \(request.body),
                        \(request.bodyBytes), \(request.truncated), \(request.remoteAddr), \(request.time))
                RETURNING id
                """, logger)?.get("id", Int64.self) ?? 0
            try await connection.run("""
                DELETE FROM bin_request WHERE bin_id = \(request.binId) AND id NOT IN
                  (SELECT id FROM bin_request WHERE bin_id = \(request.binId) ORDER BY id DESC LIMIT \(keep))
                """, logger)
            return id
        }
    }

    func requests(bin: String) async throws -> [BinRequest] {
        try await read { connection in
            try await connection.rows("SELECT * FROM bin_request WHERE bin_id = \(bin) ORDER BY id DESC", logger).map(BinRequest.init)
        }
    }

    func binSummaries(limit: Int) async throws -> [BinSummary] {
        try await read { connection in
            try await connection.rows("""
                SELECT bin.id AS id, COUNT(bin_request.id) AS count
                FROM bin LEFT JOIN bin_request ON bin_request.bin_id = bin.id GROUP BY bin.id ORDER BY MAX(bin.created) DESC LIMIT \(limit)
                """, logger).map { BinSummary(id: try $0.get("id"), count: try $0.get("count", Int.self)) }
        }
    }
}

extension PostgresStore: MetadataStore {
    func referencedBlobs() async throws -> Set<String> {
        try await read { connection in
            Set(try await connection.rows("SELECT blob FROM entry WHERE blob IS NOT NULL UNION SELECT blob FROM image", logger)
                .map { try $0.get("blob", String.self) })
        }
    }
}
