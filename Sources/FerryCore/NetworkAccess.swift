/// What a background session allows of the network: the configuration's
/// `waitsForConnectivity`, `allowsExpensiveNetworkAccess`, `allowsConstrainedNetworkAccess`,
/// `allowsCellularAccess` and `isDiscretionary`, carried to ferryd with ``AttachSession``.
/// ferryd starts a task only when the path to its host satisfies them; until then the task
/// waits (``WaitingReason/Kind/noNetwork`` and the kinds after it) without using an attempt.
///
/// ```swift
/// var access = NetworkAccess()
/// access.allowsExpensiveNetworkAccess = false   // not over a phone's tethered link
/// access.isDiscretionary = true                 // when on mains power and an unmetered link
/// let attach = AttachSession(sessionIdentifier: "com.example.bg", networkAccess: access)
/// ```
public struct NetworkAccess: Hashable, Sendable, Codable {
    /// Tell the owner once (`taskIsWaitingForConnectivity`) when a task waits for the network.
    /// A background task waits either way, as on Apple's platforms.
    public var waitsForConnectivity: Bool
    /// May use a link ferryd knows as expensive (metered, or cellular).
    public var allowsExpensiveNetworkAccess: Bool
    /// May use a link ferryd knows as constrained (a low-data mode).
    public var allowsConstrainedNetworkAccess: Bool
    /// May use a cellular link (a WWAN interface).
    public var allowsCellularAccess: Bool
    /// The transfer can wait for good conditions: an unmetered, unconstrained link and mains power.
    public var isDiscretionary: Bool

    public init(
        waitsForConnectivity: Bool = false, allowsExpensiveNetworkAccess: Bool = true,
        allowsConstrainedNetworkAccess: Bool = true, allowsCellularAccess: Bool = true, isDiscretionary: Bool = false
    ) {
        self.waitsForConnectivity = waitsForConnectivity
        self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        self.allowsConstrainedNetworkAccess = allowsConstrainedNetworkAccess
        self.allowsCellularAccess = allowsCellularAccess
        self.isDiscretionary = isDiscretionary
    }

    /// Anything allowed: what a session that never said otherwise gets.
    public static let unrestricted = NetworkAccess()

    // Fields a peer leaves out keep their defaults, so a newer ferryd reads an older client.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = NetworkAccess()
        waitsForConnectivity = try container.decodeIfPresent(Bool.self, forKey: .waitsForConnectivity) ?? defaults.waitsForConnectivity
        allowsExpensiveNetworkAccess = try container.decodeIfPresent(Bool.self, forKey: .allowsExpensiveNetworkAccess) ?? defaults.allowsExpensiveNetworkAccess
        allowsConstrainedNetworkAccess = try container.decodeIfPresent(Bool.self, forKey: .allowsConstrainedNetworkAccess) ?? defaults.allowsConstrainedNetworkAccess
        allowsCellularAccess = try container.decodeIfPresent(Bool.self, forKey: .allowsCellularAccess) ?? defaults.allowsCellularAccess
        isDiscretionary = try container.decodeIfPresent(Bool.self, forKey: .isDiscretionary) ?? defaults.isDiscretionary
    }
}
