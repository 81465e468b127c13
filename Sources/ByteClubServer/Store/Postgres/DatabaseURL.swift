import Foundation
import NIOSSL
import PostgresNIO

/// A PostgreSQL URL as `--database-url` takes it, libpq's form:
/// `postgres://user:password@host:5432/database?sslmode=require`, or a unix socket's folder
/// as `postgres://user@/database?host=/var/run/postgresql`. The database defaults to the
/// user's name, the port to 5432; `sslmode` is `disable` (the default) or `require`.
///
/// Its `description` never shows the password: that is what logs and errors print.
struct DatabaseURL: Sendable, CustomStringConvertible {
    var host: String
    /// The folder of the server's socket (`?host=/dir`), instead of TCP to ``host``.
    var socketDirectory: String?
    var port: Int
    var username: String
    var password: String?
    var database: String
    var requireTLS: Bool

    init(_ raw: String) throws(DatabaseURLError) {
        let shown = Self.redacted(raw)
        guard let url = URLComponents(string: raw), let scheme = url.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw DatabaseURLError("'\(shown)' is not a PostgreSQL URL (postgres://user:password@host:port/database)")
        }
        guard let user = url.user.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw DatabaseURLError("'\(shown)' names no user (postgres://USER@host/database)")
        }
        username = user
        password = url.password?.removingPercentEncoding
        port = url.port ?? 5432
        let path = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        database = path.isEmpty ? user : (path.removingPercentEncoding ?? path)
        let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        socketDirectory = query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        host = url.host ?? ""
        guard !host.isEmpty || socketDirectory != nil else {
            throw DatabaseURLError("'\(shown)' names no host (postgres://user@HOST/database, or ?host=/socket/folder)")
        }
        switch query["sslmode"] ?? "disable" {
        case "disable": requireTLS = false
        case "require", "verify-full": requireTLS = true
        case let other: throw DatabaseURLError("'\(shown)': sslmode '\(other)' is not supported (disable or require)")
        }
    }

    /// `postgres://user@host:port/database`: where, never the password.
    var description: String {
        let place = socketDirectory.map { "/\(database)?host=\($0)" } ?? "\(host):\(port)/\(database)"
        return "postgres://\(username)@\(place)"
    }

    /// `raw` with the password replaced by `***`, for errors about a URL that did not parse.
    static func redacted(_ raw: String) -> String {
        guard let at = raw.lastIndex(of: "@"), let scheme = raw.range(of: "://"), scheme.upperBound < at,
              let colon = raw[scheme.upperBound..<at].firstIndex(of: ":") else { return raw }
        return String(raw[..<raw.index(after: colon)]) + "***" + String(raw[at...])
    }

    /// TLS for the pool (verified against the system's roots), or none.
    var clientTLS: PostgresClient.Configuration.TLS {
        requireTLS ? .require(.makeClientConfiguration()) : .disable
    }

    /// The pool's configuration: at most `poolSize` connections, none kept while idle.
    func clientConfiguration(poolSize: Int) throws -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketDirectory {
            configuration = .init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username, password: password, database: database)
        } else {
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: clientTLS)
        }
        configuration.options.maximumConnections = max(1, poolSize)
        configuration.options.minimumConnections = 0
        return configuration
    }

    /// One connection's configuration, for the probe at start.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        if let socketDirectory {
            return .init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username, password: password, database: database)
        }
        let tls: PostgresConnection.Configuration.TLS = requireTLS ? .require(try NIOSSLContext(configuration: .makeClientConfiguration())) : .disable
        return .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
    }
}

/// A `--database-url` that is not one, or a database that cannot be used: the message names
/// the URL without its password and says what went wrong.
///
/// ```swift
/// do { _ = try await ByteClubServer(configuration: configuration) }
/// catch let error as DatabaseURLError { print(error) }  // "cannot connect to postgres://byteclub@db:5432/club: connection refused"
/// ```
public struct DatabaseURLError: Error, CustomStringConvertible, Sendable {
    /// What was wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}
