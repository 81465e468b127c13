public import Foundation

/// What the share sheet (`ferry share`) hands an extension process it starts: the items and
/// how to present the compose sheet. Written as a 0600 JSON file whose path is in
/// `FERRY_SHARE_REQUEST`; the extension writes its ``ShareOutcome`` to `FERRY_SHARE_RESULT`.
/// Extension authors never touch these: ``ShareExtension/main(_:)`` reads and writes them.
public struct ShareRequest: Sendable, Codable, Equatable {
    /// The format's version; an extension refuses a request from a newer share sheet.
    public var version: Int = 1
    /// The extension's bundle identifier, as the share sheet chose it.
    public var extensionBundleIdentifier: String
    /// The extension's display name (the compose sheet's title).
    public var extensionName: String
    public var items: [ExtensionItem]
    public var presentation: Presentation

    /// How the compose sheet runs.
    public enum Presentation: String, Sendable, Codable {
        /// A terminal screen the user edits; Enter posts, Esc cancels.
        case terminal
        /// No screen: the text is taken as given and Post is chosen at once (scripts, `--post`).
        case post
    }

    public static let requestVariable = "FERRY_SHARE_REQUEST"
    public static let resultVariable = "FERRY_SHARE_RESULT"
    public static let currentVersion = 1

    public init(extensionBundleIdentifier: String, extensionName: String, items: [ExtensionItem], presentation: Presentation) {
        self.extensionBundleIdentifier = extensionBundleIdentifier
        self.extensionName = extensionName
        self.items = items
        self.presentation = presentation
    }

    /// The request this process was started with, or a clear error saying why there is none.
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ShareRequest {
        guard let path = environment[requestVariable], !path.isEmpty else {
            throw ShareKitError("this program is a share extension: run it through `ferry share` (\(requestVariable) is not set)")
        }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw ShareKitError("cannot read the share request \(path): \(error.localizedDescription)")
        }
        let request: ShareRequest
        do { request = try JSONDecoder().decode(ShareRequest.self, from: data) } catch {
            throw ShareKitError("the share request \(path) is not valid: \(error)")
        }
        guard request.version <= currentVersion else {
            throw ShareKitError("the share request is version \(request.version); this extension reads up to \(currentVersion)")
        }
        return request
    }
}

/// How an extension ended the request: what `ferry share` reports.
public struct ShareOutcome: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable {
        /// `completeRequest(returningItems:)`: the extension did its work (or handed it to ferryd).
        case completed
        /// `cancelRequest(withError:)`, or the user cancelled.
        case cancelled
    }

    public var kind: Kind
    /// The error's description when cancelled with one.
    public var error: String?
    /// What the extension returned (usually nothing).
    public var returnedItems: [ExtensionItem]
    /// CLOCK_MONOTONIC nanoseconds when Post was chosen, so the share sheet can tell how long
    /// the extension lived after it (the promise: it hands off and exits at once).
    public var postSelectedAt: UInt64?
    /// CLOCK_MONOTONIC nanoseconds when the extension completed or cancelled the request.
    public var endedAt: UInt64

    public init(kind: Kind, error: String? = nil, returnedItems: [ExtensionItem] = [], postSelectedAt: UInt64? = nil, endedAt: UInt64 = MonotonicClock.nanoseconds()) {
        self.kind = kind
        self.error = error
        self.returnedItems = returnedItems
        self.postSelectedAt = postSelectedAt
        self.endedAt = endedAt
    }

    /// Written next to the destination and renamed, so the share sheet never reads half of it.
    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(self)
        let temporary = path + ".partial"
        try data.write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else {
            throw ShareKitError("cannot write the share result \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// CLOCK_MONOTONIC, the clock both the share sheet and the extension read: their times compare.
public enum MonotonicClock {
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
