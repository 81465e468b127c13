public import FerryCore
public import Foundation
import GRDB

/// A background session: one row of the `session` table.
///
/// ```swift
/// let (session, created) = try await store.openSession(
///     "com.example.app.bg", appBundleIdentifier: "com.example.app", sharedContainerIdentifier: "group.example")
/// ```
public struct SessionRecord: Hashable, Sendable {
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
    /// False: ferryd does not start the app for the session's events (the configuration's
    /// `sessionSendsLaunchEvents`); they wait for it to attach.
    public var sendsLaunchEvents: Bool
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
        self.sendsLaunchEvents = true
        self.lastTaskIdentifier = 0
    }
}

extension SessionRecord: StoredRecord {
    static let table = StoredTable(
        "session",
        columns: [
            "identifier", "app_bundle_identifier", "shared_container_identifier", "created_at", "last_task_identifier",
            "maximum_connections_per_host", "network_access", "transfer_options", "keeps_events", "sends_launch_events",
        ],
        identity: ["identifier"])

    init(row: inout RowReader) throws {
        identifier = try row.value()
        appBundleIdentifier = try row.value()
        sharedContainerIdentifier = try row.optional()
        createdAt = try row.date()
        lastTaskIdentifier = try row.value()
        maximumConnectionsPerHost = try row.value()
        networkAccess = try row.json()
        transferOptions = try row.json()
        keepsEvents = try row.value()
        sendsLaunchEvents = try row.value()
    }

    func columnValues() throws -> [DatabaseValue] {
        [
            identifier.databaseValue, appBundleIdentifier.databaseValue, sharedContainerIdentifier.storedValue,
            createdAt.storedValue, lastTaskIdentifier.databaseValue, maximumConnectionsPerHost.databaseValue,
            try JSONColumn.value(networkAccess), try JSONColumn.value(transferOptions), keepsEvents.databaseValue,
            sendsLaunchEvents.databaseValue,
        ]
    }
}
