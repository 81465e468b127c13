package import FerryCore
import Foundation
package import FerryProtocol

/// The network and power as the scheduler sees them, and its one question: may a task of a
/// session with this ``NetworkAccess`` start against this host now, or what does it wait for?
package struct NetworkConditions: Hashable, Sendable {
    /// nil until the monitor's first reading (or with the monitor off): every host is reachable.
    package var path: NetworkPath?
    package var isOnMains = true
    /// What the reading came from (`netlink`, `proc`; `+networkmanager` when NetworkManager
    /// said which links are metered), for status.
    package var source = "none"

    package init(path: NetworkPath? = nil, isOnMains: Bool = true, source: String = "none") {
        self.path = path
        self.isOnMains = isOnMains
        self.source = source
    }

    /// For `status`: nil before the first reading.
    package var status: NetworkStatus? {
        guard let path else { return nil }
        let links = path.links.values.filter { $0.isUp && !$0.isLoopback }.sorted { $0.name < $1.name }.map {
            NetworkStatus.Link(name: $0.name, isExpensive: $0.isExpensive, isConstrained: $0.isConstrained, isCellular: $0.isCellular)
        }
        return NetworkStatus(source: source, hasDefaultRoute: path.hasDefaultRoute, links: links, isOnMains: isOnMains)
    }

    /// The link a connection to `host` leaves by now: nil before the first reading, over
    /// loopback, or when no link routes there.
    package func link(toward host: String) -> String? {
        guard let link = path?.link(toward: host), !link.isLoopback else { return nil }
        return link.name
    }

    /// How long a link must stay lost before the transfers over it are stopped (ferryd's and
    /// in-process): one that drops for a moment (a Wi-Fi roam) keeps its TCP connections.
    package static let routeLossGrace = Duration.seconds(1)

    /// Whether a connection made to `host` over `link` has lost its way in this reading: the
    /// link is down or gone, or no longer routes to the host. A better route appearing beside
    /// one that stays is not a loss (the connection still works).
    package func hasLost(_ link: String, toward host: String) -> Bool {
        guard let path else { return false }
        return path.links[link]?.isUp != true || !path.reaches(host, over: link)
    }

    /// Whether a task to `host` may start now under `access`, and the link it would leave by.
    package enum Admission: Sendable {
        case held(WaitingReason)
        /// `link`: nil before the first reading or over loopback (as ``link(toward:)``).
        case allowed(link: String?)
    }

    /// Why a task to `host` may not start, or nil when it may.
    package func hold(host: String, access: NetworkAccess) -> WaitingReason? {
        if case .held(let reason) = admission(host: host, access: access) { return reason }
        return nil
    }

    /// ``hold(host:access:)`` and ``link(toward:)`` from one look at the routes (ferryd's
    /// scheduler asks both for every task it starts).
    package func admission(host: String, access: NetworkAccess) -> Admission {
        guard let path else { return .allowed(link: nil) }
        guard let link = path.link(toward: host) else {
            return .held(WaitingReason(kind: .noNetwork, host: host, message: "no network: no link that is up has a route to \(host)"))
        }
        if link.isLoopback { return .allowed(link: nil) }
        if let reason = hold(host: host, over: link, access: access) { return .held(reason) }
        return .allowed(link: link.name)
    }

    /// Why `access` keeps a task to `host` off `link`, or nil.
    private func hold(host: String, over link: NetworkPath.Link, access: NetworkAccess) -> WaitingReason? {
        if link.isCellular, !access.allowsCellularAccess {
            return WaitingReason(kind: .cellularNetwork, host: host,
                message: "the route to \(host) is over cellular link \(link.name) and the session does not allow it (allowsCellularAccess)")
        }
        if link.isExpensive, !access.allowsExpensiveNetworkAccess {
            let metered = link.isMeteredByNetworkManager ? " (metered, says NetworkManager)" : ""
            return WaitingReason(kind: .expensiveNetwork, host: host,
                message: "the route to \(host) is over expensive link \(link.name)\(metered) and the session does not allow it (allowsExpensiveNetworkAccess)")
        }
        if link.isConstrained, !access.allowsConstrainedNetworkAccess {
            return WaitingReason(kind: .constrainedNetwork, host: host,
                message: "the route to \(host) is over constrained link \(link.name) and the session does not allow it (allowsConstrainedNetworkAccess)")
        }
        if access.isDiscretionary, link.isExpensive || link.isConstrained || !isOnMains {
            let wants = link.isExpensive || link.isConstrained ? "an unmetered link (\(link.name) is not)" : "mains power (on battery)"
            return WaitingReason(kind: .discretionary, host: host, message: "discretionary: waits for \(wants)")
        }
        return nil
    }
}

/// Which interfaces ferryd counts as cellular, expensive or constrained: shell patterns of
/// interface names. The kernel does not know which link is metered; NetworkManager does, and
/// when it runs its `Metered` adds to these (``DaemonConfiguration/networkManagerBusAddress``,
/// docs/ferryd.md).
public struct NetworkInterfaceClasses: Hashable, Sendable {
    /// WWAN links (`ww*` in systemd's predictable names). Cellular links are also expensive.
    public var cellular: [String] = ["ww*"]
    public var expensive: [String] = []
    public var constrained: [String] = []

    public init(cellular: [String] = ["ww*"], expensive: [String] = [], constrained: [String] = []) {
        self.cellular = cellular
        self.expensive = expensive
        self.constrained = constrained
    }
}

/// How ferryd learns of network changes.
public enum NetworkMonitoring: Hashable, Sendable {
    /// rtnetlink notifications (a change is seen within milliseconds); polling when a netlink
    /// socket cannot be opened.
    case automatic
    /// Reads /proc every `interval` seconds; no netlink.
    case polling(interval: Double)
    /// No monitor: every host counts as reachable.
    case off
}

extension NetworkInterfaceClasses {
    /// The classes this machine's user set for ferryd and for in-process sessions alike:
    /// `FERRYD_CELLULAR_INTERFACES`, `FERRYD_EXPENSIVE_INTERFACES`, `FERRYD_CONSTRAINED_INTERFACES`,
    /// each comma-separated name patterns (docs/ferryd.md, "Network"); a variable left out keeps
    /// its default.
    public init(environment: [String: String]) {
        func patterns(_ name: String) -> [String]? {
            environment[name].map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
        }
        self.init()
        if let cellular = patterns("FERRYD_CELLULAR_INTERFACES") { self.cellular = cellular }
        if let expensive = patterns("FERRYD_EXPENSIVE_INTERFACES") { self.expensive = expensive }
        if let constrained = patterns("FERRYD_CONSTRAINED_INTERFACES") { self.constrained = constrained }
    }
}
