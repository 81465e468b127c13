public import Foundation
public import Logging

/// The OAuth clients a byteclub-server accepts at `/oauth2/authorize`, for
/// `byteclub-server clients …`. The Byte Club app (`byteclub`, redirects
/// `http://127.0.0.1/callback` and `http://[::1]/callback` on any port) is registered by the
/// store itself; register others here. It opens the same database as the running servers (the
/// data directory's SQLite file, or the PostgreSQL database they share), which see a change on
/// their next request.
///
/// ```swift
/// let clients = try await ByteClubClients(dataDirectory: "/srv/byteclub")
/// // or: try await ByteClubClients(databaseURL: "postgres://byteclub@db.internal/byteclub")
/// try await clients.add(id: "notes-web", name: "Notes on the web", redirectURIs: ["https://notes.example/oauth/callback"])
/// for client in try await clients.list() { print(client.id, client.redirectURIs) }
/// await clients.close()
/// ```
public struct ByteClubClients: Sendable {
    let store: any MetadataStore

    /// Opens the database as ``ByteClubAccounts/init(dataDirectory:createIfMissing:)`` does.
    public init(dataDirectory: String, createIfMissing: Bool = false) async throws {
        store = try await ByteClubAccounts(dataDirectory: dataDirectory, createIfMissing: createIfMissing).store
    }

    /// Opens the PostgreSQL database as ``ByteClubAccounts/init(databaseURL:logger:)`` does.
    public init(databaseURL: String, logger: Logger = Logger(label: "byteclub-clients")) async throws {
        store = try await ByteClubAccounts(databaseURL: databaseURL, logger: logger).store
    }

    /// Registers a public client (no secret: PKCE protects its codes) with its redirect URIs,
    /// or adds redirect URIs to a registered one. Each URI must be absolute, without a
    /// fragment, and `http` only on a loopback host (see ``RedirectURIs/isRegistrable(_:)``).
    @discardableResult
    public func add(id: String, name: String? = nil, redirectURIs: [String]) async throws -> OAuthClient {
        do { try AccountNames.check(id) } catch { throw AccountError("A client id " + error.description.dropFirst("An account name ".count)) }
        guard !redirectURIs.isEmpty else { throw AccountError("Give at least one redirect URI (--redirect URI)") }
        for uri in redirectURIs where !RedirectURIs.isRegistrable(uri) {
            throw AccountError("Not a redirect URI this server registers: \(uri) (absolute, no fragment; http only for 127.0.0.1, [::1] or localhost)")
        }
        return try await store.addClient(id: id, name: name ?? id, redirectURIs: redirectURIs)
    }

    /// Every registered client, oldest first.
    public func list() async throws -> [OAuthClient] {
        try await store.oauthClients()
    }

    /// Closes the database connection.
    public func close() async {
        await store.close()
    }
}

/// A registered OAuth client.
public struct OAuthClient: Sendable, Equatable {
    /// The `client_id`.
    public var id: String
    /// Shown on the approve/deny page.
    public var name: String
    /// Where codes may be sent (loopback IP literals on any port, see ``RedirectURIs``).
    public var redirectURIs: [String]
    /// When it was registered.
    public var created: Date
}
