public import Foundation

/// The OAuth clients a data directory's server accepts at `/oauth2/authorize`, for
/// `byteclub-server clients …`. The Byte Club app (`byteclub`, redirects
/// `http://127.0.0.1/callback` and `http://[::1]/callback` on any port) is registered by the
/// store itself; register others here. A running server sees a change on its next request.
///
/// ```swift
/// let clients = try ByteClubClients(dataDirectory: "/srv/byteclub")
/// try clients.add(id: "notes-web", name: "Notes on the web", redirectURIs: ["https://notes.example/oauth/callback"])
/// for client in try clients.list() { print(client.id, client.redirectURIs) }
/// ```
public struct ByteClubClients: Sendable {
    let store: Store

    /// Opens the data directory's database (see ``ByteClubAccounts/init(dataDirectory:createIfMissing:)``).
    public init(dataDirectory: String, createIfMissing: Bool = false) throws {
        store = try Store.open(dataDirectory: dataDirectory, createIfMissing: createIfMissing)
    }

    /// Registers a public client (no secret: PKCE protects its codes) with its redirect URIs,
    /// or adds redirect URIs to a registered one. Each URI must be absolute, without a
    /// fragment, and `http` only on a loopback host (see ``RedirectURIs/isRegistrable(_:)``).
    @discardableResult
    public func add(id: String, name: String? = nil, redirectURIs: [String]) throws -> OAuthClient {
        do { try AccountNames.check(id) } catch { throw AccountError("A client id " + error.description.dropFirst("An account name ".count)) }
        guard !redirectURIs.isEmpty else { throw AccountError("Give at least one redirect URI (--redirect URI)") }
        for uri in redirectURIs where !RedirectURIs.isRegistrable(uri) {
            throw AccountError("Not a redirect URI this server registers: \(uri) (absolute, no fragment; http only for 127.0.0.1, [::1] or localhost)")
        }
        return try store.addClient(id: id, name: name ?? id, redirectURIs: redirectURIs)
    }

    /// Every registered client, oldest first.
    public func list() throws -> [OAuthClient] {
        try store.oauthClients()
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
