public import FerryApps
public import Foundation

/// The host's side of sharing (what `ferry share` runs): which installed share extensions
/// accept the items, and running the chosen one as its own process with the items.
///
/// ```swift
/// let items = [ExtensionItem(contentText: "Highland Cow", attachments: [try ItemProvider(contentsOf: cow)])]
/// let sheet = ShareSheet(registry: AppRegistry(paths: try FerryPaths()))
/// let offered = try sheet.choices(for: items).filter(\.isOffered)
/// let result = try await sheet.run(offered[0], items: items, presentation: .post)
/// print(result.outcome.kind)   // completed
/// ```
public struct ShareSheet: Sendable {
    public let registry: AppRegistry

    public init(registry: AppRegistry) {
        self.registry = registry
    }

    /// An installed share extension and what its activation rule says of the items.
    public struct Choice: Sendable {
        public var app: AppManifest
        public var appExtension: ExtensionManifest
        /// Nil when the rule accepts the items; else why it does not.
        public var refusal: String?
        public var isOffered: Bool { refusal == nil }
    }

    /// Every installed share extension, offered or not (with the reason), in name order.
    /// A manifest whose rule no longer parses is listed as refused, with the parse error.
    public func choices(for items: [ExtensionItem]) throws -> [Choice] {
        let content = items.shareContent
        var choices: [Choice] = []
        for app in try registry.list() {
            for appExtension in app.extensions where appExtension.point == "share" {
                var refusal: String?
                do {
                    let rule = try ShareExtensions.rule(for: appExtension)
                    refusal = rule.evaluate(content).reason
                } catch {
                    refusal = "its activation rule is not valid: \(error)"
                }
                choices.append(Choice(app: app, appExtension: appExtension, refusal: refusal))
            }
        }
        return choices.sorted { ($0.appExtension.name, $0.appExtension.bundleIdentifier) < ($1.appExtension.name, $1.appExtension.bundleIdentifier) }
    }

    /// How a run ended.
    public struct Result: Sendable {
        /// What the extension said; a cancellation with the reason when it exited without saying.
        public var outcome: ShareOutcome
        /// The extension's exit status (or the signal's number when `signalled`).
        public var exitStatus: Int32
        public var signalled: Bool
        /// How long the extension lived after Post, when it posted.
        public var exitAfterPost: Duration?
    }

    /// Starts the extension's program with the items (it inherits this terminal) and waits
    /// for it to exit. Throws only when it cannot be started.
    public func run(_ choice: Choice, items: [ExtensionItem], presentation: ShareRequest.Presentation,
                    environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> Result {
        guard let program = choice.appExtension.executables.first else {
            throw ShareKitError("\(choice.appExtension.bundleIdentifier) names no program")
        }
        let directory = try Self.privateDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let requestFile = directory.appendingPathComponent("request.json")
        let resultFile = directory.appendingPathComponent("result.json")
        let request = ShareRequest(extensionBundleIdentifier: choice.appExtension.bundleIdentifier, extensionName: choice.appExtension.name,
                                   items: items, presentation: presentation)
        try JSONEncoder().encode(request).write(to: requestFile)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = []
        var environment = environment
        environment[ShareRequest.requestVariable] = requestFile.path
        environment[ShareRequest.resultVariable] = resultFile.path
        process.environment = environment
        let exitedAt = ExitTime()
        let exited = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in
            exitedAt.mark()
            exited.continuation.yield()
            exited.continuation.finish()
        }
        do { try process.run() } catch {
            throw ShareKitError("cannot start \(program): \(error.localizedDescription)")
        }
        for await _ in exited.stream {}
        process.waitUntilExit()
        // The extension took the terminal for its compose sheet: take it back.
        if isatty(STDIN_FILENO) == 1 { Terminal.takeForeground() }

        let signalled = process.terminationReason == .uncaughtSignal
        var outcome: ShareOutcome
        if let data = try? Data(contentsOf: resultFile), let written = try? JSONDecoder().decode(ShareOutcome.self, from: data) {
            outcome = written
        } else {
            let how = signalled ? "was killed by signal \(process.terminationStatus)" : "exited with status \(process.terminationStatus)"
            outcome = ShareOutcome(kind: .cancelled, error: "the extension \(how) without ending the request")
        }
        var afterPost: Duration?
        if let posted = outcome.postSelectedAt, let end = exitedAt.value, end >= posted {
            afterPost = .nanoseconds(Int64(end - posted))
        }
        return Result(outcome: outcome, exitStatus: process.terminationStatus, signalled: signalled, exitAfterPost: afterPost)
    }

    /// A 0700 directory for the request and result files (they may hold the user's text).
    private static func privateDirectory() throws -> URL {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("ferry-share-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ShareKitError("cannot make a temporary directory: \(String(cString: strerror(errno)))")
        }
        return URL(fileURLWithPath: String(cString: made), isDirectory: true)
    }
}

/// When the extension was seen to exit (set once by the termination handler).
private final class ExitTime: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var at: UInt64?
    func mark() { lock.withLock { at = MonotonicClock.nanoseconds() } }
    var value: UInt64? { lock.withLock { at } }
}
