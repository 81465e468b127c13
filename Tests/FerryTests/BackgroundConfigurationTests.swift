import Ferry
import FerryTestSupport
import Foundation
import Testing

/// Every `Configuration` property is either carried to ferryd for a background session, used
/// by the library itself, or refused when the session is made: none is silently dropped.
@Suite("A background session's configuration, property by property", .serialized)
struct BackgroundConfigurationTests {
    /// Sent with each task: ferryd applies them to that task's requests (checked below; the
    /// credential storage's for the task's host in BackgroundTrustTests).
    static let carriedWithEachTask: Set = [
        "httpAdditionalHeaders", "timeoutIntervalForRequest", "timeoutIntervalForResource", "retryPolicy", "urlCredentialStorage",
    ]
    /// Sent once per session when it attaches, checked by their own suites: BackgroundTrustTests
    /// (trust roots, client identity, HTTP/2 off, resumable uploads, proxies), BackgroundNetworkTests and NetworkTests (the
    /// network five), FerryDaemonTests (the per-host limit), AppLaunchTests (launch events off).
    static let carriedWithTheSession: Set = [
        "httpMaximumConnectionsPerHost", "allowsHTTP2", "resumableUploads", "additionalTrustedCertificateFiles", "clientIdentity", "proxies",
        "waitsForConnectivity", "allowsExpensiveNetworkAccess", "allowsConstrainedNetworkAccess", "allowsCellularAccess", "isDiscretionary",
        "sessionSendsLaunchEvents",
    ]
    /// What the library itself uses to reach ferryd and its session; the cookies, which the
    /// library adds to each submission and stores from each response event
    /// (BackgroundSessionTests "a background session's cookies").
    static let usedByTheLibrary: Set = [
        "kind", "identifier", "sharedContainerIdentifier", "ferryEnvironment",
        "httpCookieStorage", "httpShouldSetCookies", "httpCookieAcceptPolicy",
    ]
    /// In-process only: a background session that sets them is refused.
    static let refused: Set = ["downloadDirectory", "maximumDataTaskBodySize", "urlCache", "requestCachePolicy"]

    @Test("every stored property of Configuration is in exactly one of the lists")
    func everyPropertyIsAccountedFor() {
        let properties = Set(Mirror(reflecting: Configuration.background(identifier: "walk")).children.compactMap(\.label))
        let lists = [Self.carriedWithEachTask, Self.carriedWithTheSession, Self.usedByTheLibrary, Self.refused]
        #expect(properties == lists.reduce(Set()) { $0.union($1) }, "unlisted: \(properties.subtracting(lists.reduce(Set()) { $0.union($1) }))")
        #expect(lists.map(\.count).reduce(0, +) == properties.count, "a property is in two lists")
    }

    @Test("in-process-only settings refuse the session with a clear error, from Session.background and from a task")
    func refusals() async throws {
        var directory = Configuration.background(identifier: "refused.dir")
        directory.downloadDirectory = URL(fileURLWithPath: "/var/tmp")
        var limit = Configuration.background(identifier: "refused.limit")
        limit.maximumDataTaskBodySize = 1 << 20
        for (configuration, property) in [(directory, "downloadDirectory"), (limit, "maximumDataTaskBodySize")] {
            #expect(configuration.backgroundRefusal?.code == .unsupportedBackgroundConfiguration)
            do {
                _ = try Session.background(configuration)
                Issue.record("\(property) should refuse the session")
            } catch {
                #expect(error.code == .unsupportedBackgroundConfiguration && error.message.hasPrefix(property), "\(error)")
            }
            let session = Session(configuration: configuration)
            let task = session.dataTask(with: URL(string: "http://127.0.0.1:9/")!)
            task.resume()
            await task.waitUntilCompleted()
            #expect(task.error?.code == .unsupportedBackgroundConfiguration, "\(String(describing: task.error))")
            session.invalidateAndCancel()
        }
        #expect(Configuration.background(identifier: "plain").backgroundRefusal == nil)
    }

    @Test("the per-task settings reach ferryd with the task (as `ferry list --json` shows it)")
    func perTaskSettingsReachFerryd() async throws {
        try await withDaemonAndServer { daemon, server in
            var configuration = daemon.configuration("bg.walk")
            configuration.httpAdditionalHeaders = ["X-Club": "byte"]
            configuration.timeoutIntervalForRequest = 17
            configuration.timeoutIntervalForResource = 3600
            configuration.retryPolicy = .standard
            let session = try Session.background(configuration)
            let task = session.dataTask(with: server.url("/bytes/10"))
            task.earliestBeginDate = Date().addingTimeInterval(86_400)  // stays in ferryd's list
            task.resume()
            let listed = try await runFerry(["list", "--json", "--session", "bg.walk"], environment: daemon.environment)
            let text = listed.output
            #expect(text.contains("X-Club") && text.contains("byte"), "the session's header went with the task: \(text.prefix(1500))")
            #expect(text.contains("\"timeoutIntervalForRequest\" : 17") || text.contains("\"timeoutIntervalForRequest\":17"), "\(text.prefix(1500))")
            #expect(text.contains("3600"), "the resource time-out")
            #expect(text.contains("retryPolicy"), "the retry policy")
            session.invalidateAndCancel()
        }
    }
}
