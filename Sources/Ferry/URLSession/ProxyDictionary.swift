public import FerryCore
import Foundation

// CFNetwork's proxy keys, for `connectionProxyDictionary` (CFNetwork is not on Linux).
public let kCFNetworkProxiesHTTPEnable = "HTTPEnable"
public let kCFNetworkProxiesHTTPProxy = "HTTPProxy"
public let kCFNetworkProxiesHTTPPort = "HTTPPort"
public let kCFNetworkProxiesHTTPSEnable = "HTTPSEnable"
public let kCFNetworkProxiesHTTPSProxy = "HTTPSProxy"
public let kCFNetworkProxiesHTTPSPort = "HTTPSPort"
public let kCFNetworkProxiesExceptionsList = "ExceptionsList"
public let kCFProxyUsernameKey = "kCFProxyUsernameKey"
public let kCFProxyPasswordKey = "kCFProxyPasswordKey"

extension ProxySettings {
    /// The proxies a `connectionProxyDictionary` names. A proxy counts when its `…Enable` is
    /// true (or left out) and it has a host; the port defaults to 80 for HTTP and 443 for
    /// HTTPS as CFNetwork's does; `[:]` is no proxy at all.
    ///
    /// ```swift
    /// let configuration = URLSessionConfiguration.default
    /// configuration.connectionProxyDictionary = [
    ///     kCFNetworkProxiesHTTPEnable: true, kCFNetworkProxiesHTTPProxy: "proxy.lan", kCFNetworkProxiesHTTPPort: 3128,
    /// ]
    /// ```
    public init(connectionProxyDictionary dictionary: [AnyHashable: Any]) {
        func value(_ key: String) -> Any? { dictionary[AnyHashable(key)] }
        func number(_ key: String) -> Int? {
            switch value(key) {
            case let n as Int: n
            case let n as NSNumber: n.intValue
            case let s as String: Int(s)
            default: nil
            }
        }
        func enabled(_ key: String) -> Bool {
            switch value(key) {
            case nil: true
            case let b as Bool: b
            case let n as NSNumber: n.boolValue
            case let n as Int: n != 0
            default: true
            }
        }
        let user = value(kCFProxyUsernameKey) as? String
        let password = value(kCFProxyPasswordKey) as? String
        func server(_ enable: String, _ host: String, _ port: String, defaultPort: Int) -> Server? {
            guard enabled(enable), let name = value(host) as? String, !name.isEmpty else { return nil }
            return Server(host: name, port: number(port) ?? defaultPort, user: user, password: password)
        }
        self.init(
            http: server(kCFNetworkProxiesHTTPEnable, kCFNetworkProxiesHTTPProxy, kCFNetworkProxiesHTTPPort, defaultPort: 80),
            https: server(kCFNetworkProxiesHTTPSEnable, kCFNetworkProxiesHTTPSProxy, kCFNetworkProxiesHTTPSPort, defaultPort: 443),
            bypass: (value(kCFNetworkProxiesExceptionsList) as? [String]) ?? [])
    }
}
