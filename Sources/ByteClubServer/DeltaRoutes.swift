import Crypto
import Foundation
import Hummingbird

/// Dropbox v1's change feed: `POST /1/delta` (what changed since a cursor, paged) and
/// `GET /1/longpoll_delta` (wait until something changes after a cursor), over the change
/// journal (`Store+Journal.swift`).
struct DeltaRoutes: Sendable {
    let state: ServerState

    /// Dropbox's bounds for `timeout`, save that shorter waits (down to 1 s) are allowed for tests.
    static let timeouts = 1...480

    func add(to router: Routes) {
        router.post("/1/delta") { request, context in try await delta(request, context) }
        router.get("/1/longpoll_delta") { request, context in try await longpoll(request, context) }
    }

    func delta(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let namespace = account.namespaceId
        let parameters = try await state.parameters(request)
        let prefix = try parameters["path_prefix"].map { try DropboxPath.parse(decoded: $0, parameter: "path_prefix") } ?? .root
        var after: Int64 = 0
        var reset = true
        if let raw = parameters["cursor"], !raw.isEmpty {
            let cursor = try DeltaCursor.parse(raw)
            // A cursor of another namespace, or ahead of this journal (another database): start
            // over with reset=true, as Dropbox did for cursors it could not continue.
            if cursor.namespace == namespace, cursor.sequence <= (try await state.store.head(namespace)) {
                after = cursor.sequence
                reset = false
            }
        }
        let page = try await state.store.delta(namespace, after: after, prefix: prefix, limit: state.configuration.deltaPageSize)
        let entries: [[Any]] = page.items.map { item in
            [item.pathLower, item.entry.map { Metadata.object($0, root: "dropbox") as Any } ?? NSNull()]
        }
        return try .jsonObject([
            "entries": entries, "reset": reset, "has_more": page.hasMore,
            "cursor": DeltaCursor(namespace: namespace, sequence: page.cursor).encoded,
        ])
    }

    func longpoll(_ request: Request, _ context: ByteClubContext) async throws -> Response {
        let account = try await state.filesAccount(request)
        let namespace = account.namespaceId
        let parameters = request.uri.queryParameters.reduce(into: [String: String]()) { $0[String($1.key)] = String($1.value) }
        guard let raw = parameters["cursor"], !raw.isEmpty else { throw APIError.badParameter("cursor", "missing (take it from /1/delta)") }
        let cursor = try DeltaCursor.parse(raw)
        let timeout = try parameters.int("timeout", default: 30, range: Self.timeouts)
        let store = state.store
        // A cursor delta would answer with reset=true has changes: the client calls delta now.
        guard cursor.namespace == namespace, cursor.sequence <= (try await store.head(namespace)) else {
            return try .jsonObject(["changes": true])
        }
        let channel = context.channel
        let inputs = state.closedInputs
        let changed = try await store.changes.wait(
            namespace: namespace, timeout: .seconds(timeout), recheck: .milliseconds(Int64(state.configuration.longPollRecheckInterval * 1000)),
            isGone: { inputs.clientGone(channel) },
            hasChanged: { try await store.head(namespace) > cursor.sequence })
        return try .jsonObject(["changes": changed])
    }
}

/// A delta cursor: the namespace and the last journal sequence the client has, with a check
/// so that anything else is told apart as garbage: `bc1_<namespace hex>_<sequence hex>_<check>`.
struct DeltaCursor: Sendable, Equatable {
    let namespace: Int64
    let sequence: Int64

    var encoded: String {
        "bc1_\(String(namespace, radix: 16))_\(String(sequence, radix: 16))_\(Self.check(namespace, sequence))"
    }

    /// 400 naming `cursor` unless `raw` is a cursor this server made.
    static func parse(_ raw: String) throws(APIError) -> DeltaCursor {
        let parts = raw.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "bc1", let namespace = Int64(parts[1], radix: 16), let sequence = Int64(parts[2], radix: 16),
              sequence >= 0, parts[3] == check(namespace, sequence)
        else {
            throw APIError.badParameter("cursor", "not a cursor from /1/delta (call /1/delta without a cursor to start over)")
        }
        return DeltaCursor(namespace: namespace, sequence: sequence)
    }

    private static func check(_ namespace: Int64, _ sequence: Int64) -> String {
        SHA256.hash(data: Data("byteclub delta \(namespace) \(sequence)".utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
    }
}
