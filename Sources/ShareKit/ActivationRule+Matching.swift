/// What is being shared, as an activation rule sees it: whether there is text, and the
/// type of each attachment.
///
/// ```swift
/// let content = ShareContent(hasText: true, attachments: [try TypeIdentifier.detect(fileAt: photo)])
/// rule.accepts(content)
/// ```
///
/// Each attachment is its most specific type: a file's detected type (`public.jpeg`), a
/// web link as `public.url`, a local file given as a URL as `public.file-url`, a web page's
/// content as `public.html`, shared text as `public.plain-text`.
public struct ShareContent: Sendable, Hashable {
    /// Whether the items carry text (what was typed or shared as text, `--text`).
    public var hasText: Bool
    /// The type of each attachment, in order.
    public var attachments: [TypeIdentifier]

    public init(hasText: Bool = false, attachments: [TypeIdentifier] = []) {
        self.hasText = hasText
        self.attachments = attachments
    }

    /// Nothing to share: no text and no attachment.
    public var isEmpty: Bool { !hasText && attachments.isEmpty }
}

extension ActivationRule {
    /// Whether a rule offers its extension for some content, and if not, why.
    ///
    /// ```swift
    /// switch rule.evaluate(content) {
    /// case .accepted: offer(extension)
    /// case .refused(let reason): log.debug("not offered: \(reason)")   // "2 images, at most 1"
    /// }
    /// ```
    public enum Verdict: Sendable, Hashable, CustomStringConvertible {
        case accepted
        case refused(reason: String)

        public var isAccepted: Bool { self == .accepted }

        /// Why the content was refused; `nil` when accepted.
        public var reason: String? {
            if case .refused(let reason) = self { return reason }
            return nil
        }

        public var description: String { reason.map { "refused: \($0)" } ?? "accepted" }
    }

    /// Whether the extension is offered for `content`: ``evaluate(_:)`` is ``Verdict/accepted``.
    public func accepts(_ content: ShareContent) -> Bool { evaluate(content).isAccepted }

    /// Decides, as Apple's share sheet does, whether `content` activates the extension:
    ///
    /// 1. Empty content is refused, whatever the rule.
    /// 2. A predicate decides the rest (``ActivationPredicate/evaluate(_:)``); the steps
    ///    below are the dictionary's.
    /// 3. Text alone needs `SupportsText`. Text that comes with attachments is the post's
    ///    text and needs nothing: the attachments decide.
    /// 4. Every attachment must be covered by a key of the rule (a count above 0), the
    ///    first that fits in this order: Image (`public.image`), Movie (`public.movie`),
    ///    WebURL (`public.url` but not `public.file-url`), WebPage (`public.html`), Text
    ///    (`public.plain-text`, when `SupportsText`), File (anything but a web URL),
    ///    Attachments (anything). So with Image and File keys, a PNG counts as an image,
    ///    never as a file; without an Image key it counts as a file.
    /// 5. Each key's count is at most its maximum, and with `AttachmentsWithMaxCount` the
    ///    number of attachments is at most that.
    ///
    /// The reason names the first rule broken: `2 images, at most 1`, `movies are not
    /// supported (public.mpeg-4)`, `text alone is not supported`, `nothing to share`.
    public func evaluate(_ content: ShareContent) -> Verdict {
        if content.isEmpty { return .refused(reason: "nothing to share") }
        if let predicate { return predicate.evaluate(content) }
        if content.attachments.isEmpty {
            return supportsText ? .accepted : .refused(reason: "text alone is not supported")
        }
        var counts: [Key: Int] = [:]
        for type in content.attachments {
            guard let key = key(covering: type) else {
                return .refused(reason: "\(Self.kind(of: type)) are not supported (\(type.rawValue))")
            }
            counts[key, default: 0] += 1
        }
        for key in Key.allCases where key != .supportsText && key != .attachmentCount {
            if let count = counts[key], let limit = self[count: key], count > limit, let noun = key.noun {
                return .refused(reason: "\(count) \(count == 1 ? noun.singular : noun.plural), at most \(limit)")
            }
        }
        if let limit = maxAttachmentCount, limit > 0, content.attachments.count > limit {
            return .refused(reason: "\(content.attachments.count) attachments, at most \(limit)")
        }
        return .accepted
    }

    /// The dictionary key that covers an attachment of `type` under the order of
    /// ``evaluate(_:)`` (``Key/supportsText`` for text), or `nil` when none does (always for
    /// a predicate rule).
    public func key(covering type: TypeIdentifier) -> Key? {
        func has(_ key: Key) -> Bool { (self[count: key] ?? 0) > 0 }
        let isWebURL = type.conforms(to: .url) && !type.conforms(to: .fileURL)
        if has(.imageCount), type.conforms(to: .image) { return .imageCount }
        if has(.movieCount), type.conforms(to: .movie) { return .movieCount }
        if has(.webURLCount), isWebURL { return .webURLCount }
        if has(.webPageCount), type.conforms(to: .html) { return .webPageCount }
        if supportsText, type.conforms(to: .plainText) { return .supportsText }
        if has(.fileCount), !isWebURL { return .fileCount }
        if has(.attachmentCount) { return .attachmentCount }
        return nil
    }

    /// The plural people would use for attachments of `type`, in refusals.
    static func kind(of type: TypeIdentifier) -> String {
        if type.conforms(to: .image) { return "images" }
        if type.conforms(to: .movie) { return "movies" }
        if type.conforms(to: .url) && !type.conforms(to: .fileURL) { return "web URLs" }
        if type.conforms(to: .html) { return "web pages" }
        if type.conforms(to: .plainText) { return "text attachments" }
        return "files"
    }
}
