import FerryCore
@testable import FerryDaemon
@testable import FerryNetwork
import FerryProtocol
import Testing

/// How ferryd decides that the network reaches a host, on readings written by hand, and the
/// two readers (netlink, /proc) on this machine's own namespace.
@Suite("Network path")
struct NetworkPathTests {
    /// eth0 (up, default route, 192.168.1.0/24), wwan0 (up, 10.64.0.0/10), tun0 (down, 10.8.0.0/24).
    static let path = NetworkPath(
        links: [
            "lo": .init(name: "lo", isUp: true, isLoopback: true),
            "eth0": .init(name: "eth0", isUp: true, isLoopback: false),
            "wwan0": .init(name: "wwan0", isUp: true, isLoopback: false),
            "tun0": .init(name: "tun0", isUp: false, isLoopback: false),
        ],
        routes: [
            .init(destination: [0, 0, 0, 0], prefixLength: 0, link: "eth0", metric: 100),
            .init(destination: [0, 0, 0, 0], prefixLength: 0, link: "wwan0", metric: 700),
            .init(destination: [192, 168, 1, 0], prefixLength: 24, link: "eth0"),
            .init(destination: [10, 64, 0, 0], prefixLength: 10, link: "wwan0"),
            .init(destination: [10, 8, 0, 0], prefixLength: 24, link: "tun0"),
            .init(destination: [192, 168, 1, 20], prefixLength: 32, link: "eth0", isLocal: true),
        ])

    @Test("a running transfer has lost its way when its link goes down or away or no longer routes to its host, not when a better route appears")
    func lostRoutes() {
        let before = NetworkConditions(path: Self.path)
        #expect(before.link(toward: "example.com") == "eth0")
        #expect(before.link(toward: "127.0.0.1") == nil, "loopback is never lost")
        #expect(!before.hasLost("eth0", toward: "example.com"))
        #expect(!NetworkConditions().hasLost("eth0", toward: "example.com"), "no reading: nothing is lost")

        var down = Self.path
        down.links["eth0"]?.isUp = false
        #expect(NetworkConditions(path: down).hasLost("eth0", toward: "example.com"), "its link is down (wwan0 routes it now)")
        var gone = Self.path
        gone.links["eth0"] = nil
        #expect(NetworkConditions(path: gone).hasLost("eth0", toward: "192.168.1.7"))
        var unrouted = Self.path
        unrouted.routes.removeAll { $0.link == "wwan0" }
        #expect(NetworkConditions(path: unrouted).hasLost("wwan0", toward: "10.65.1.1"), "wwan0 is up, but no longer routes to the host (eth0's default route does)")
        var better = Self.path
        better.links["eth1"] = .init(name: "eth1", isUp: true, isLoopback: false)
        better.routes.append(.init(destination: [0, 0, 0, 0], prefixLength: 0, link: "eth1", metric: 10))
        #expect(NetworkConditions(path: better).link(toward: "example.com") == "eth1")
        #expect(!NetworkConditions(path: better).hasLost("eth0", toward: "example.com"), "eth0 is still up: its connection still works")
    }

    @Test("an IP literal takes its longest matching route whose link is up; a name takes the best default route")
    func routeLookup() {
        let path = Self.path
        #expect(path.link(toward: "192.168.1.7")?.name == "eth0")
        #expect(path.link(toward: "10.65.1.1")?.name == "wwan0", "10.64/10 is longer than the default route")
        #expect(path.link(toward: "10.8.0.5")?.name == "eth0", "tun0 is down: its route is not usable, the default route is")
        #expect(path.link(toward: "example.com")?.name == "eth0", "metric 100 beats 700")
        #expect(path.link(toward: "127.0.0.1")?.isLoopback == true)
        #expect(path.link(toward: "[::1]")?.isLoopback == true)
        #expect(path.link(toward: "localhost")?.isLoopback == true)
        #expect(path.link(toward: "192.168.1.20")?.isLoopback == true, "this machine's own address")
        #expect(path.link(toward: "2001:db8::1") == nil, "no IPv6 route at all")
        var offline = path
        offline.links["eth0"]?.isUp = false
        offline.links["wwan0"]?.isUp = false
        #expect(offline.link(toward: "example.com") == nil)
        #expect(offline.link(toward: "127.0.0.1")?.isLoopback == true, "loopback is always reachable")
        #expect(!offline.hasDefaultRoute && path.hasDefaultRoute)
    }

    @Test("a session's network access holds tasks on the links it does not allow, each with its own reason")
    func holds() {
        let path = Self.path.classified(by: NetworkInterfaceClasses(expensive: ["eth*"]))
        #expect(path.links["wwan0"]?.isCellular == true && path.links["wwan0"]?.isExpensive == true)
        #expect(path.links["eth0"]?.isExpensive == true && path.links["eth0"]?.isCellular == false)
        let conditions = NetworkConditions(path: path, isOnMains: false)
        #expect(conditions.hold(host: "example.com", access: .unrestricted) == nil)
        var access = NetworkAccess()
        access.allowsCellularAccess = false
        #expect(conditions.hold(host: "10.64.0.1", access: access)?.kind == .cellularNetwork)
        #expect(conditions.hold(host: "192.168.1.7", access: access) == nil)
        access = NetworkAccess(allowsExpensiveNetworkAccess: false)
        #expect(conditions.hold(host: "example.com", access: access)?.kind == .expensiveNetwork)
        #expect(conditions.hold(host: "127.0.0.1", access: access) == nil, "loopback is never expensive")
        access = NetworkAccess(isDiscretionary: true)
        #expect(conditions.hold(host: "example.com", access: access)?.kind == .discretionary)
        let unmetered = NetworkConditions(path: Self.path.classified(by: NetworkInterfaceClasses()), isOnMains: false)
        #expect(unmetered.hold(host: "192.168.1.7", access: access)?.message.contains("mains power") == true)
        #expect(NetworkConditions(path: unmetered.path, isOnMains: true).hold(host: "192.168.1.7", access: access) == nil)
        #expect(NetworkConditions(path: nil).hold(host: "example.com", access: access) == nil, "no reading yet: nothing is held")
        var down = Self.path
        down.links["eth0"]?.isUp = false
        down.links["wwan0"]?.isUp = false
        let reason = NetworkConditions(path: down).hold(host: "example.com", access: .unrestricted)
        #expect(reason?.kind == .noNetwork && reason?.kind.isConnectivity == true)
    }

    @Test("a reading is better than another when it has a usable route the other lacks, or mains power back")
    func betterReadings() {
        var down = Self.path
        down.links["eth0"]?.isUp = false
        let up = NetworkConditions(path: Self.path)
        #expect(up.isBetter(than: NetworkConditions(path: down)))
        #expect(!NetworkConditions(path: down).isBetter(than: up))
        #expect(!up.isBetter(than: up))
        #expect(NetworkConditions(path: Self.path, isOnMains: true).isBetter(than: NetworkConditions(path: Self.path, isOnMains: false)))
    }

    @Test("netlink and /proc read the same links and default routes of this namespace")
    func readersAgree() throws {
        let netlink = try RouteNetlink.read()
        let proc = try ProcNetwork.read()
        #expect(!netlink.links.isEmpty && netlink.links["lo"]?.isLoopback == true)
        #expect(Set(netlink.links.keys) == Set(proc.links.keys))
        for (name, link) in netlink.links { #expect(proc.links[name]?.isUp == link.isUp, "\(name)") }
        #expect(netlink.hasDefaultRoute == proc.hasDefaultRoute)
        let defaults = { (path: NetworkPath) in Set(path.routes.filter(\.isDefault).map { "\($0.destination.count) \($0.link)" }) }
        #expect(defaults(netlink) == defaults(proc))
    }
}
