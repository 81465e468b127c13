/// A user name and password a background task may answer a `401` with: what the app's
/// credential storage held for the task's host when it was submitted, for one realm or, with
/// no realm, for any. ferryd keeps it with the task and never shows it: not in task listings,
/// not in logs.
///
/// ```swift
/// submission.credentials = [TaskCredential(realm: "club", user: "alice", password: secret)]
/// ```
public struct TaskCredential: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The realm it answers (as the server's challenge names it); nil: any realm of the host.
    public var realm: String?
    public var user: String
    public var password: String

    public init(realm: String?, user: String, password: String) {
        self.realm = realm
        self.user = user
        self.password = password
    }

    /// The user and realm, never the password.
    public var description: String { "\(user) for \(realm.map { "realm \"\($0)\"" } ?? "any realm")" }
}
