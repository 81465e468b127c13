public import Foundation

/// The service's URLs for the club's folder, in one place (the tutorial's `Dropbox` helper).
public struct ClubRoutes: Sendable {
    public let server: URL
    /// The shared folder every member sees.
    public static let folder = "byteclub"
    public static let photosFolder = "byteclub/photos"

    public init(server: URL) { self.server = server }

    /// `GET /1/metadata/dropbox/byteclub`: the folder and its children.
    public var notesListing: URL { url("/1/metadata/dropbox/\(Self.folder)", ["list": "true"]) }

    /// `GET /1/search/dropbox/byteclub/photos?query=.jpg`.
    public var photosSearch: URL { url("/1/search/dropbox/\(Self.photosFolder)", ["query": ".jpg"]) }

    /// `GET /1/files/dropbox/<path>`.
    public func file(_ path: String) -> URL { url("/1/files/dropbox" + Self.escaped(path)) }

    /// `PUT /1/files_put/dropbox/<path>`, replacing `parentRev` when given (else a new file).
    public func put(_ path: String, parentRev: String?) -> URL {
        var query = ["overwrite": parentRev == nil ? "false" : "true"]
        if let parentRev { query["parent_rev"] = parentRev }
        return url("/1/files_put/dropbox" + Self.escaped(path), query)
    }

    /// `GET /1/thumbnails/dropbox/<path>?size=m`.
    public func thumbnail(_ path: String, size: String = "m") -> URL {
        url("/1/thumbnails/dropbox" + Self.escaped(path), ["size": size])
    }

    /// `POST /1/delta` and `GET /1/longpoll_delta`: the change feed.
    public var delta: URL { url("/1/delta") }
    public func longpollDelta(cursor: String, timeout: Int) -> URL {
        url("/1/longpoll_delta", ["cursor": cursor, "timeout": String(timeout)])
    }

    /// `GET /oauth2/authorize?…`: the server's page where the member approves the app (OAuth 2.0
    /// authorization code with PKCE).
    public func authorize(_ query: [String: String]) -> URL { url("/oauth2/authorize", query) }
    /// `POST /oauth2/token`: an authorization code redeemed for an access token.
    public var token: URL { url("/oauth2/token") }

    /// A note's or photo's path in the club's folder.
    public static func notePath(_ name: String) -> String { "/\(folder)/\(name)" }
    public static func photoPath(_ name: String) -> String { "/\(photosFolder)/\(name)" }

    /// Each segment percent-escaped (spaces, `#`, `?`, non-ASCII), the slashes kept.
    static func escaped(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#;%")
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        return segments.map { "/" + ($0.addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0)) }.joined()
    }

    private func url(_ path: String, _ query: [String: String] = [:]) -> URL {
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false)!
        let base = components.percentEncodedPath.hasSuffix("/") ? String(components.percentEncodedPath.dropLast()) : components.percentEncodedPath
        components.percentEncodedPath = base + path
        if !query.isEmpty {
            components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        }
        return components.url!
    }
}
