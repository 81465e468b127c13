public import Foundation

/// Where a session's requests go first: an HTTP proxy for `http` URLs, one for `https` URLs
/// (reached with `CONNECT`), and the hosts that go direct.
///
/// ```swift
/// var configuration = Configuration.default
/// configuration.proxies = ProxySettings(http: .init(host: "proxy.lan", port: 3128), https: .init(host: "proxy.lan", port: 3128),
///                                       bypass: [".internal.example", "10.0.0.1"])
/// ```
///
/// From the environment (``environment(_:)``), as curl reads it: `http_proxy` (lower case
/// only), `https_proxy` or `HTTPS_PROXY`, `no_proxy` or `NO_PROXY`; loopback hosts
/// (`localhost`, `127.0.0.0/8`, `::1`) always go direct then, as Go's HTTP client does.
public struct ProxySettings: Hashable, Sendable, Codable {
    /// A proxy server, with the credential it asks for (`Proxy-Authorization: Basic`), if any.
    public struct Server: Hashable, Sendable, Codable {
        public var host: String
        public var port: Int
        public var user: String?
        public var password: String?

        public init(host: String, port: Int, user: String? = nil, password: String? = nil) {
            self.host = host
            self.port = port
            self.user = user
            self.password = password
        }

        /// `http://[user:password@]host[:port]`, or `host:port`; nil for anything else: a
        /// `socks5://` proxy, and an `https://` one (reached over TLS, which Ferry does not do:
        /// its password would go in clear). The port defaults to 1080 as curl's does.
        public init?(parsing text: String) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { return nil }
            let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
            guard let url = URL(string: withScheme), url.scheme?.lowercased() == "http",
                let host = url.host, !host.isEmpty
            else { return nil }
            self.init(
                host: host, port: url.port ?? 1080, user: url.user?.removingPercentEncoding,
                password: url.password?.removingPercentEncoding)
        }
    }

    public var http: Server?
    public var https: Server?
    /// Hosts that go direct: a name matches itself and its subdomains (a leading dot is the
    /// same), an address matches itself, `*` matches every host.
    public var bypass: [String]
    /// Whether loopback hosts go direct whatever ``bypass`` says.
    public var bypassesLoopback: Bool

    public init(http: Server? = nil, https: Server? = nil, bypass: [String] = [], bypassesLoopback: Bool = false) {
        self.http = http
        self.https = https
        self.bypass = bypass
        self.bypassesLoopback = bypassesLoopback
    }

    /// No proxy: every request goes direct.
    public static let direct = ProxySettings()

    /// The proxies an environment names (curl's variables; see the type's documentation).
    public static func environment(_ environment: [String: String]) -> ProxySettings {
        let noProxy = environment["no_proxy"] ?? environment["NO_PROXY"] ?? ""
        return ProxySettings(
            http: environment["http_proxy"].flatMap(Server.init(parsing:)),
            https: (environment["https_proxy"] ?? environment["HTTPS_PROXY"]).flatMap(Server.init(parsing:)),
            bypass: noProxy.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty },
            bypassesLoopback: true)
    }

    /// The proxy a request to `url` goes through, or nil to go direct.
    public func server(for url: URL) -> Server? {
        // Asked for every request: with no proxy (the usual case), the URL is not even looked at.
        guard http != nil || https != nil else { return nil }
        guard let server = url.scheme?.lowercased() == "https" ? https : http, var host = url.host?.lowercased() else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if bypassesLoopback && Self.isLoopback(host) { return nil }
        for entry in bypass {
            // A port after a name or IPv4 address is ignored; an IPv6 address is taken whole.
            let lowered = entry.lowercased()
            let parts = lowered.split(separator: ":")
            let pattern = parts.count > 2 ? lowered : String(parts.first ?? "")
            if pattern == "*" { return nil }
            let bare = pattern.hasPrefix(".") ? String(pattern.dropFirst()) : pattern
            if host == bare || host.hasSuffix("." + bare) { return nil }
        }
        return server
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasSuffix(".localhost") || host == "::1"
            || (host.hasPrefix("127.") && host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil })
    }
}
