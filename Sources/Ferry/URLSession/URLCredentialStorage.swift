import FerryCore
public import FerryEngine
import Foundation
import Synchronization

/// Credentials by protection space, in URLSession's spelling: `.default` and background
/// sessions use ``shared``, `.ephemeral` ones a storage of their own. Kept in memory only
/// (Ferry has no keychain: the storage writes no passwords to disk), for the process's life.
/// A background task carries its host's credentials to ferryd, whose store keeps them until
/// the task ends.
///
/// ```swift
/// let space = URLProtectionSpace(host: "api.example.com", port: 443, protocol: "https", realm: "club",
///                                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
/// URLCredentialStorage.shared.setDefaultCredential(URLCredential(user: "alice", password: secret, persistence: .forSession), for: space)
/// ```
public final class URLCredentialStorage: Sendable, CredentialSource {
    private struct Entry {
        var space: URLProtectionSpace
        var credentials: [String: URLCredential]
        var defaultUser: String?
    }
    private let entries = Mutex<[URLProtectionSpace: Entry]>([:])

    /// A storage of its own (an `.ephemeral` session's).
    public init() {}

    public static let shared = URLCredentialStorage()

    public var allCredentials: [URLProtectionSpace: [String: URLCredential]] {
        entries.withLock { $0.mapValues(\.credentials) }
    }

    public func credentials(for space: URLProtectionSpace) -> [String: URLCredential]? {
        entries.withLock { $0[space]?.credentials }
    }

    /// Keeps `credential` for `space` (one per user); `.none` persistence is not kept.
    public func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard credential.persistence != .none, let user = credential.user else { return }
        entries.withLock { entries in
            entries[space, default: Entry(space: space, credentials: [:])].credentials[user] = credential
        }
    }

    public func remove(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard let user = credential.user else { return }
        entries.withLock { entries in
            entries[space]?.credentials[user] = nil
            if entries[space]?.defaultUser == user { entries[space]?.defaultUser = nil }
        }
    }

    public func defaultCredential(for space: URLProtectionSpace) -> URLCredential? {
        entries.withLock { entries in
            guard let entry = entries[space] else { return nil }
            return entry.defaultUser.flatMap { entry.credentials[$0] } ?? (entry.credentials.count == 1 ? entry.credentials.values.first : nil)
        }
    }

    public func setDefaultCredential(_ credential: URLCredential, for space: URLProtectionSpace) {
        set(credential, for: space)
        entries.withLock { $0[space]?.defaultUser = credential.user }
    }

    // MARK: For the engine

    public func defaultCredential(for space: ProtectionSpace) -> Credential? {
        let candidates = entries.withLock { $0.values.filter { $0.space.covers(space) }.map(\.space) }
        return candidates.lazy.compactMap { self.defaultCredential(for: $0)?.credential }.first
    }

    /// What a background task to `url` may answer a `401` with in ferryd: each protection
    /// space of its host, port and scheme, with its default credential.
    func taskCredentials(for url: URL) -> [TaskCredential] {
        guard let origin = ProtectionSpace.Origin(url) else { return [] }
        let spaces = entries.withLock {
            $0.keys.filter { $0.host == origin.host && $0.port == origin.port && ($0.protocol == nil || $0.protocol == origin.scheme) }
        }
        return spaces.sorted { ($0.realm ?? "") < ($1.realm ?? "") }.compactMap { space in
            defaultCredential(for: space).flatMap { credential in
                credential.user.map { TaskCredential(realm: space.realm, user: $0, password: credential.password ?? "") }
            }
        }
    }

    /// A credential the delegate gave (not `.none`) was accepted: kept as the space's default.
    public func credentialAccepted(_ credential: Credential, for space: ProtectionSpace) {
        setDefaultCredential(URLCredential(user: credential.user, password: credential.password, persistence: .forSession), for: URLProtectionSpace(space))
    }
}
