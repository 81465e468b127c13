import Glibc

/// What ferryd knows of its network namespace: the links and the routes over them. A value,
/// read whole from the kernel (netlink, or /proc when polling) each time something changes,
/// so a missed notification costs a delay, never a wrong state.
package struct NetworkPath: Hashable, Sendable {
    /// A network interface and what ferryd makes of it.
    package struct Link: Hashable, Sendable {
        package var name: String
        /// Administratively up and with a carrier (`IFF_UP` and `IFF_RUNNING`).
        package var isUp: Bool
        package var isLoopback: Bool
        /// A WWAN link (the configuration's `cellularInterfaces`, `ww*` by default, or a
        /// NetworkManager modem).
        package var isCellular = false
        /// Metered: cellular, named in the configuration's `expensiveInterfaces`, or metered
        /// by NetworkManager.
        package var isExpensive = false
        /// NetworkManager says it is metered (yes, or its guess of yes).
        package var isMeteredByNetworkManager = false
        /// Named in the configuration's `constrainedInterfaces`.
        package var isConstrained = false

        package static let loopback = Link(name: "lo", isUp: true, isLoopback: true)
    }

    /// A unicast route of the main table (or a local address of the local table).
    package struct Route: Hashable, Sendable {
        /// 4 bytes for IPv4, 16 for IPv6; the prefix's bits, the rest zero.
        package var destination: [UInt8]
        package var prefixLength: Int
        package var link: String
        /// Lower wins among routes of the same prefix length.
        package var metric: UInt32 = 0
        /// A route to one of this machine's own addresses: reached through loopback.
        package var isLocal = false

        package var isDefault: Bool { prefixLength == 0 }
    }

    package var links: [String: Link] = [:]
    package var routes: [Route] = []

    /// The link a connection to `host` would leave by, or nil when there is none that is up.
    /// An IP literal takes the longest matching route; a name (it must be resolved first)
    /// takes the best default route of either family. Loopback hosts always have a path.
    package func link(toward host: String) -> Link? {
        let bare = Self.bare(host)
        if bare.lowercased() == "localhost" || bare.lowercased().hasSuffix(".localhost") { return .loopback }
        let address = Self.address(bare)
        if let address, Self.isLoopback(address) { return .loopback }
        guard let best = usable(routes(toward: address)).first else { return nil }
        return best.isLocal ? .loopback : links[best.link]
    }

    /// Whether `link` still has a usable route to `host` (for a name, a default route): a
    /// connection that left by it can still be carried, even when another link is now better.
    package func reaches(_ host: String, over link: String) -> Bool {
        !usable(routes(toward: Self.address(Self.bare(host))).filter { $0.link == link }).isEmpty
    }

    /// The routes that could carry a connection to `address` (those whose prefix holds it), or
    /// for a name (nil: it must be resolved first) the default routes of either family.
    private func routes(toward address: [UInt8]?) -> [Route] {
        guard let address else { return routes.filter(\.isDefault) }
        return routes.filter { $0.destination.count == address.count && Self.prefix(of: address, matches: $0) }
    }

    /// `host` without the brackets of an IPv6 literal in a URL.
    private static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// Whether a host name (not a literal) would find a link: the "online" of `ferry daemon status`.
    package var hasDefaultRoute: Bool { !usable(routes.filter(\.isDefault)).isEmpty }

    /// The routes whose link is up (or that are local), as a set: what can be reached.
    package var usableRoutes: Set<Route> { Set(routes.filter { $0.isLocal || links[$0.link]?.isUp == true }) }

    /// The routes whose link is up, best first: longest prefix, then lowest metric.
    private func usable(_ candidates: [Route]) -> [Route] {
        candidates
            .filter { $0.isLocal || links[$0.link]?.isUp == true }
            .sorted { ($0.prefixLength, UInt32.max - $0.metric) > ($1.prefixLength, UInt32.max - $1.metric) }
    }

    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func isLoopback(_ address: [UInt8]) -> Bool {
        if address.count == 4 { return address[0] == 127 }
        if address == Array(repeating: 0, count: 15) + [1] { return true }
        // ::ffff:127.x.x.x
        return address.count == 16 && address[0..<10].allSatisfy { $0 == 0 } && address[10] == 0xff && address[11] == 0xff && address[12] == 127
    }

    static func prefix(of address: [UInt8], matches route: Route) -> Bool {
        var bits = route.prefixLength
        for (index, byte) in address.enumerated() where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xff : ~(0xff >> UInt8(bits))
            if byte & mask != route.destination[index] & mask { return false }
            bits -= 8
        }
        return true
    }
}

extension NetworkPath {
    /// Marks links cellular, expensive or constrained by the configuration's name patterns
    /// (shell globs, `fnmatch`) and, when NetworkManager runs, by what it says of its devices:
    /// metered (yes or guess-yes) is expensive, a modem is cellular. Either source suffices;
    /// NetworkManager has no notion of constrained, so that stays the patterns'. Linux has no
    /// kernel notion of a metered link; see docs/ferryd.md.
    func classified(by classes: NetworkInterfaceClasses, networkManager: NetworkManagerDevices? = nil) -> NetworkPath {
        var path = self
        for (name, link) in links {
            var link = link
            let device = networkManager?.devices[name]
            link.isMeteredByNetworkManager = device?.metered.isMetered ?? false
            link.isCellular = device?.isModem == true || classes.cellular.contains { fnmatch($0, name, 0) == 0 }
            link.isExpensive = link.isCellular || link.isMeteredByNetworkManager || classes.expensive.contains { fnmatch($0, name, 0) == 0 }
            link.isConstrained = classes.constrained.contains { fnmatch($0, name, 0) == 0 }
            path.links[name] = link
        }
        return path
    }
}
