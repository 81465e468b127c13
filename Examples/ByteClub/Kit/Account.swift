import ExampleSupport
public import Foundation

/// Who the app is signed in as: the server and the access token every call carries.
///
/// ```swift
/// let account = try ByteClubAccount.current()      // environment, else the saved file
/// let club = ByteClub(account: account)
/// ```
public struct ByteClubAccount: Codable, Sendable, Equatable {
    public var server: URL
    public var accessToken: String
    /// The member's name, when the sign-in told it.
    public var member: String?

    public init(server: URL, accessToken: String, member: String? = nil) {
        self.server = server
        self.accessToken = accessToken
        self.member = member
    }

    /// `BYTECLUB_SERVER` and `BYTECLUB_ACCESS_TOKEN` override what `login` saved, each on its own.
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ByteClubAccount {
        let saved = try AccountFile(environment: environment).load()
        // An empty variable counts as unset.
        let server = environment["BYTECLUB_SERVER"].flatMap { $0.isEmpty ? nil : URL(string: $0) } ?? saved?.server
        let token = environment["BYTECLUB_ACCESS_TOKEN"].flatMap { $0.isEmpty ? nil : $0 } ?? saved?.accessToken
        guard let server, let token, !token.isEmpty else { throw ByteClubError.notSignedIn }
        return ByteClubAccount(server: server, accessToken: token, member: saved?.member)
    }

    /// The header the tutorial set on its session's configuration.
    var authorization: String { "Bearer \(accessToken)" }
}

/// `$XDG_CONFIG_HOME/byteclub/account.json` (else `~/.config/byteclub/`), readable by its owner only.
public struct AccountFile: Sendable {
    let file: SettingsFile<ByteClubAccount>
    public var url: URL { file.url }

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        file = SettingsFile(url: ByteClubPaths(environment: environment).config.appendingPathComponent("account.json"), ownerOnly: true)
    }

    public func load() throws -> ByteClubAccount? {
        do { return try file.load() } catch { throw ByteClubError.local("\(error); or run `byteclub logout`") }
    }

    public func save(_ account: ByteClubAccount) throws {
        do { try file.save(account) } catch { throw ByteClubError.local("\(error)") }
    }

    /// Returns whether there was an account to forget.
    @discardableResult
    public func remove() throws -> Bool {
        guard FileManager.default.fileExists(atPath: url.path) else { return false }
        try FileManager.default.removeItem(at: url)
        return true
    }
}

/// Where the app keeps things, by the XDG base-directory rules.
public struct ByteClubPaths: Sendable {
    public let config: URL
    /// Thumbnails, partial downloads and their resume data: all can be thrown away.
    public let cache: URL
    /// What the background uploads did (`byteclub history`).
    public let data: URL

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let home = URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory())
        func base(_ variable: String, _ fallback: String) -> URL {
            // The spec ignores relative paths.
            if let value = environment[variable], value.hasPrefix("/") { return URL(fileURLWithPath: value) }
            return home.appendingPathComponent(fallback)
        }
        config = base("XDG_CONFIG_HOME", ".config").appendingPathComponent("byteclub")
        cache = base("XDG_CACHE_HOME", ".cache").appendingPathComponent("byteclub")
        data = base("XDG_DATA_HOME", ".local/share").appendingPathComponent("byteclub")
    }
}
