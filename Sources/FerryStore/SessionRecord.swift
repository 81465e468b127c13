public import FerryCore
public import Foundation

/// A background session: one row of the `session` table.
///
/// ```swift
/// let (session, created) = try await store.openSession(
///     "com.example.app.bg", appBundleIdentifier: "com.example.app", sharedContainerIdentifier: "group.example")
/// ```
public struct SessionRecord: Hashable, Sendable, Codable {
    /// The identifier the app gave `Configuration.background(identifier:)`.
    public var identifier: String
    /// The containing app: the one ferryd launches for this session's events.
    public var appBundleIdentifier: String
    /// The app group whose container holds the session's files, if any.
    public var sharedContainerIdentifier: String?
    public var createdAt: Date
    /// Tasks of this session running against one host at once (`httpMaximumConnectionsPerHost`).
    public var maximumConnectionsPerHost: Int
    /// What the session allows of the network (stored as JSON; fields left out keep their defaults).
    public var networkAccess: NetworkAccess
    /// How the session's transfers are made (stored as JSON; fields left out keep their defaults).
    public var transferOptions: SessionTransferOptions
    /// False: ferryd acknowledges the session's events itself while no process owns it,
    /// instead of keeping them for the next owner (the `ferry` CLI's sessions).
    public var keepsEvents: Bool
    /// The last task identifier handed out; identifiers are never reused within a session.
    public internal(set) var lastTaskIdentifier: Int

    public init(identifier: String, appBundleIdentifier: String, sharedContainerIdentifier: String? = nil, keepsEvents: Bool = true, createdAt: Date) {
        self.identifier = identifier
        self.appBundleIdentifier = appBundleIdentifier
        self.sharedContainerIdentifier = sharedContainerIdentifier
        self.createdAt = createdAt
        self.maximumConnectionsPerHost = 6
        self.networkAccess = .unrestricted
        self.transferOptions = .standard
        self.keepsEvents = keepsEvents
        self.lastTaskIdentifier = 0
    }

    enum CodingKeys: String, CodingKey {
        case identifier
        case appBundleIdentifier = "app_bundle_identifier"
        case sharedContainerIdentifier = "shared_container_identifier"
        case createdAt = "created_at"
        case lastTaskIdentifier = "last_task_identifier"
        case maximumConnectionsPerHost = "maximum_connections_per_host"
        case networkAccess = "network_access"
        case transferOptions = "transfer_options"
        case keepsEvents = "keeps_events"
    }
}

extension SessionRecord: StoredRecord {
    static let databaseTableName = "session"
    static let identityColumns = ["identifier"]
}
