import Ferry
import FerryTestSupport
import Foundation
import Testing

/// HTTP proxies: read from the environment as curl reads it and from URLSession's
/// `connectionProxyDictionary`, and requests really sent through tinyproxy.
@Suite("Proxies")
struct ProxyTests {
    @Test("the environment: http_proxy (lower case only), https_proxy or HTTPS_PROXY, no_proxy; loopback goes direct")
    func environment() throws {
        let settings = ProxySettings.environment([
            "http_proxy": "http://u:p%40ss@proxy.lan:3128", "HTTP_PROXY": "http://ignored:1",
            "HTTPS_PROXY": "secure.lan:8443", "no_proxy": ".internal.example, 10.0.0.1 ,direct.example:8080",
        ])
        #expect(settings.http == ProxySettings.Server(host: "proxy.lan", port: 3128, user: "u", password: "p@ss"))
        #expect(settings.https == ProxySettings.Server(host: "secure.lan", port: 8443))
        #expect(settings.server(for: URL(string: "http://example.com/a")!)?.host == "proxy.lan")
        #expect(settings.server(for: URL(string: "https://example.com/a")!)?.host == "secure.lan")
        for direct in ["http://a.internal.example/", "http://internal.example/", "http://10.0.0.1/", "http://direct.example/",
                       "http://127.0.0.1:8080/", "http://localhost/", "http://[::1]/"] {
            #expect(settings.server(for: URL(string: direct)!) == nil, "\(direct) goes direct")
        }
        #expect(ProxySettings.environment(["HTTP_PROXY": "http://p:1"]).http == nil, "upper-case HTTP_PROXY is not read, as curl does not")
        #expect(ProxySettings.environment(["http_proxy": "http://p:1", "no_proxy": "*"]).server(for: URL(string: "http://x.org/")!) == nil)
        #expect(ProxySettings.environment(["http_proxy": "socks5://p:1"]).http == nil, "SOCKS is not an HTTP proxy")
        #expect(ProxySettings.Server(parsing: "proxy.lan")?.port == 1080)
    }

    @Test("connectionProxyDictionary in CFNetwork's keys; [:] is no proxy; an explicit proxy applies to loopback too")
    func dictionary() throws {
        let configuration = URLSessionConfiguration.default
        #expect(configuration.configuration.proxies == nil, "nil: the environment's")
        configuration.connectionProxyDictionary = [
            kCFNetworkProxiesHTTPEnable: true, kCFNetworkProxiesHTTPProxy: "proxy.lan", kCFNetworkProxiesHTTPPort: 3128,
            kCFNetworkProxiesHTTPSEnable: false, kCFNetworkProxiesHTTPSProxy: "unused.lan",
            kCFNetworkProxiesExceptionsList: ["skip.example"], kCFProxyUsernameKey: "u", kCFProxyPasswordKey: "pw",
        ]
        let proxies = try #require(configuration.configuration.proxies)
        #expect(proxies.http == ProxySettings.Server(host: "proxy.lan", port: 3128, user: "u", password: "pw"))
        #expect(proxies.https == nil, "HTTPSEnable false")
        #expect(proxies.server(for: URL(string: "http://127.0.0.1/")!) != nil)
        #expect(proxies.server(for: URL(string: "http://a.skip.example/")!) == nil)
        configuration.connectionProxyDictionary = [:]
        #expect(configuration.configuration.proxies == .direct)
    }

    @Test("requests go through tinyproxy (CONNECT in its log); an exception goes direct; a proxy that asks for a password gets it")
    func throughTinyproxy() async throws {
        try await withServer { server in
            let proxy = try await TinyproxyServer.start()
            defer { proxy.stop() }
            let target = try #require(server.url("/bytes/3000?seed=5").port)
            let configuration = URLSessionConfiguration.ephemeral
            configuration.connectionProxyDictionary = [
                kCFNetworkProxiesHTTPEnable: true, kCFNetworkProxiesHTTPProxy: "127.0.0.1", kCFNetworkProxiesHTTPPort: proxy.port,
            ]
            let session = URLSession(configuration: configuration)
            let (data, response) = try await session.data(from: server.url("/bytes/3000?seed=5"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200 && data.count == 3000)
            #expect(proxy.log().contains("CONNECT 127.0.0.1:\(target)"), "\(proxy.log().suffix(800))")

            let bypassing = URLSessionConfiguration.ephemeral
            bypassing.connectionProxyDictionary = [
                kCFNetworkProxiesHTTPProxy: "127.0.0.1", kCFNetworkProxiesHTTPPort: proxy.port, kCFNetworkProxiesExceptionsList: ["127.0.0.1"],
            ]
            let before = proxy.log().components(separatedBy: "CONNECT").count
            _ = try await URLSession(configuration: bypassing).data(from: server.url("/bytes/10"))
            #expect(proxy.log().components(separatedBy: "CONNECT").count == before, "an exception does not reach the proxy")

            let guarded = try await TinyproxyServer.start(user: "ferry", password: "tunnel")
            defer { guarded.stop() }
            let withPassword = URLSessionConfiguration.ephemeral
            withPassword.connectionProxyDictionary = [
                kCFNetworkProxiesHTTPProxy: "127.0.0.1", kCFNetworkProxiesHTTPPort: guarded.port,
                kCFProxyUsernameKey: "ferry", kCFProxyPasswordKey: "tunnel",
            ]
            let (_, through) = try await URLSession(configuration: withPassword).data(from: server.url("/bytes/10"))
            #expect((through as? HTTPURLResponse)?.statusCode == 200)
            let withoutPassword = URLSessionConfiguration.ephemeral
            withoutPassword.connectionProxyDictionary = [kCFNetworkProxiesHTTPProxy: "127.0.0.1", kCFNetworkProxiesHTTPPort: guarded.port]
            let refused = await #expect(throws: URLError.self) { _ = try await URLSession(configuration: withoutPassword).data(from: server.url("/bytes/10")) }
            #expect(refused?.code == .userAuthenticationRequired, "\(String(describing: refused))")
        }
    }
}
