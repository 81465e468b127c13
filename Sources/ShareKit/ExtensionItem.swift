public import Foundation

/// One thing being shared, as the share sheet hands it to an extension: optional text and
/// any number of attachments (the `NSExtensionItem` of iOS).
///
/// ```swift
/// for item in context.inputItems {
///     print(item.contentText ?? "", item.attachments.count)
/// }
/// ```
public struct ExtensionItem: Sendable, Codable, Equatable {
    /// The text the user shares along with the attachments (`attributedContentText`).
    public var contentText: String?
    /// The attachments, in the order the user gave them.
    public var attachments: [ItemProvider]

    public init(contentText: String? = nil, attachments: [ItemProvider] = []) {
        self.contentText = contentText
        self.attachments = attachments
    }
}

/// What ``ItemProvider/loadItem(forTypeIdentifier:)`` gives back, by the kind of attachment.
public enum SharedItem: Sendable, Equatable {
    /// A file: the attachment's own file, readable by the extension.
    case file(URL)
    /// A web address.
    case url(URL)
    /// Text.
    case text(String)
    /// The attachment's bytes (asked for as `public.data`).
    case data(Data)
}

/// An attachment: one file, URL or piece of text, with the type identifiers it can be loaded
/// as (the `NSItemProvider` of iOS). The types come from the content itself (libmagic), not
/// from a file's name alone.
///
/// ```swift
/// if let image = item.attachments.first(where: { $0.hasItemConforming(toTypeIdentifier: .image) }),
///    case .file(let url) = try await image.loadItem(forTypeIdentifier: .image) {
///     let details = try ImageDetails.read(fileAt: url)
/// }
/// ```
public struct ItemProvider: Sendable, Codable, Equatable {
    /// What the attachment is, most specific first (`public.jpeg`).
    public var registeredTypeIdentifiers: [TypeIdentifier]
    /// A name to show or to save it under (a file's name).
    public var suggestedName: String?
    /// The attachment's size in bytes, for files.
    public var byteCount: Int64?
    private var payload: Payload

    private enum Payload: Codable, Equatable, Sendable {
        case file(String)
        case url(String)
        case text(String)
    }

    /// A file attachment whose type is read from its bytes.
    ///
    /// ```swift
    /// let photo = try ItemProvider(contentsOf: URL(fileURLWithPath: "cow.jpg"))  // public.jpeg
    /// ```
    public init(contentsOf file: URL) throws {
        let path = file.standardizedFileURL.path
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw ShareKitError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw ShareKitError("\(path) is not a regular file")
        }
        let type = try TypeIdentifier.detect(fileAt: URL(fileURLWithPath: path))
        self.registeredTypeIdentifiers = [type]
        self.suggestedName = (path as NSString).lastPathComponent
        self.byteCount = Int64(status.st_size)
        self.payload = .file(path)
    }

    /// A web address (`public.url`), or `public.file-url` for a `file:` URL.
    public init(url: URL) {
        self.registeredTypeIdentifiers = [url.isFileURL ? .fileURL : .url]
        self.suggestedName = url.host ?? url.lastPathComponent
        self.byteCount = nil
        self.payload = .url(url.absoluteString)
    }

    /// Text as an attachment (`public.plain-text`).
    public init(text: String) {
        self.registeredTypeIdentifiers = [.plainText]
        self.suggestedName = nil
        self.byteCount = Int64(text.utf8.count)
        self.payload = .text(text)
    }

    /// True if the attachment can be loaded as `type`: one of its types conforms to it
    /// (`public.jpeg` conforms to `public.image` and `public.data`).
    public func hasItemConforming(toTypeIdentifier type: TypeIdentifier) -> Bool {
        registeredTypeIdentifiers.contains { $0.conforms(to: type) }
    }

    /// The attachment as `type`: a file as `.file` (or its bytes as `.data` when asked for
    /// `public.data` exactly), a URL as `.url`, text as `.text`. Runs off the caller's actor,
    /// so loading a large file's bytes does not hold up the compose sheet.
    public func loadItem(forTypeIdentifier type: TypeIdentifier) async throws -> SharedItem {
        guard hasItemConforming(toTypeIdentifier: type) else {
            let have = registeredTypeIdentifiers.map(\.rawValue).joined(separator: ", ")
            throw ShareKitError("the attachment is \(have), not \(type.rawValue)")
        }
        let payload = self.payload
        return try await Task.detached {
            switch payload {
            case .file(let path):
                if type == .data {
                    do { return .data(try Data(contentsOf: URL(fileURLWithPath: path))) } catch {
                        throw ShareKitError("cannot read \(path): \(error.localizedDescription)")
                    }
                }
                guard FileManager.default.isReadableFile(atPath: path) else {
                    throw ShareKitError("the shared file \(path) is gone or unreadable")
                }
                return .file(URL(fileURLWithPath: path))
            case .url(let string):
                guard let url = URL(string: string) else { throw ShareKitError("not a URL: \(string)") }
                return .url(url)
            case .text(let text):
                return .text(text)
            }
        }.value
    }
}

extension ItemProvider {
    /// The attachment's file, when it is one (no loading: for the share sheet's own listing).
    public var fileURL: URL? {
        if case .file(let path) = payload { return URL(fileURLWithPath: path) }
        return nil
    }
}

extension Array where Element == ExtensionItem {
    /// What an activation rule looks at: whether there is text, and each attachment's type.
    public var shareContent: ShareContent {
        ShareContent(
            hasText: contains { !($0.contentText ?? "").isEmpty },
            attachments: flatMap { $0.attachments.compactMap(\.registeredTypeIdentifiers.first) })
    }
}
