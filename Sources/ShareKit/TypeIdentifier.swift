import Foundation

/// A uniform type identifier in the style of Apple's UTType: a reverse-DNS name for a kind
/// of content (`public.jpeg`), which *conforms* to broader kinds (`public.image`,
/// `public.data`, `public.content`, `public.item`). Activation rules and item providers ask
/// "does this conform to public.image?", never "is this exactly public.jpeg?".
///
/// ```swift
/// let type = try TypeIdentifier.detect(fileAt: URL(fileURLWithPath: "cow.jpg"))  // .jpeg
/// type.conforms(to: .image)          // true
/// type.preferredMIMEType             // "image/jpeg"
/// TypeIdentifier(filenameExtension: "png")?.conforms(to: .data)   // true
/// TypeIdentifier(mimeType: "application/x-foo")                   // dyn.mime.application/x-foo
/// ```
///
/// The conformance graph is Apple's for the types declared here (see ``declared``). Types
/// Ferry does not declare conform only to themselves, except **dynamic** identifiers made
/// from an unknown MIME type: `dyn.mime.` followed by the MIME type in lower case, without
/// parameters (`dyn.mime.application/x-foo`). Like Apple's `dyn.` types they conform to
/// `public.data` (and so to `public.item`), and give their MIME type back.
public struct TypeIdentifier: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// `TypeIdentifier("public.jpeg")`: the same as `init(rawValue:)`.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    // MARK: Base types
    public static let item = TypeIdentifier("public.item")
    public static let content = TypeIdentifier("public.content")
    public static let data = TypeIdentifier("public.data")
    public static let compositeContent = TypeIdentifier("public.composite-content")
    public static let directory = TypeIdentifier("public.directory")
    public static let folder = TypeIdentifier("public.folder")
    public static let executable = TypeIdentifier("public.executable")
    public static let unixExecutable = TypeIdentifier("public.unix-executable")

    // MARK: Images
    public static let image = TypeIdentifier("public.image")
    public static let jpeg = TypeIdentifier("public.jpeg")
    public static let png = TypeIdentifier("public.png")
    public static let gif = TypeIdentifier("com.compuserve.gif")
    public static let webP = TypeIdentifier("org.webmproject.webp")
    public static let heif = TypeIdentifier("public.heif")
    public static let heic = TypeIdentifier("public.heic")
    public static let heifStandard = TypeIdentifier("public.heif-standard")
    public static let tiff = TypeIdentifier("public.tiff")
    public static let bmp = TypeIdentifier("com.microsoft.bmp")
    public static let ico = TypeIdentifier("com.microsoft.ico")
    public static let svg = TypeIdentifier("public.svg-image")

    // MARK: Audio and video
    public static let audiovisualContent = TypeIdentifier("public.audiovisual-content")
    public static let movie = TypeIdentifier("public.movie")
    public static let video = TypeIdentifier("public.video")
    public static let mpeg4Movie = TypeIdentifier("public.mpeg-4")
    public static let quickTimeMovie = TypeIdentifier("com.apple.quicktime-movie")
    public static let avi = TypeIdentifier("public.avi")
    public static let mpeg = TypeIdentifier("public.mpeg")
    public static let audio = TypeIdentifier("public.audio")
    public static let mp3 = TypeIdentifier("public.mp3")
    public static let mpeg4Audio = TypeIdentifier("public.mpeg-4-audio")
    public static let wav = TypeIdentifier("com.microsoft.waveform-audio")
    public static let aiff = TypeIdentifier("public.aiff-audio")
    public static let flac = TypeIdentifier("org.xiph.flac")

    // MARK: Text
    public static let text = TypeIdentifier("public.text")
    public static let plainText = TypeIdentifier("public.plain-text")
    public static let utf8PlainText = TypeIdentifier("public.utf8-plain-text")
    public static let utf16PlainText = TypeIdentifier("public.utf16-plain-text")
    public static let html = TypeIdentifier("public.html")
    public static let xml = TypeIdentifier("public.xml")
    public static let json = TypeIdentifier("public.json")
    public static let rtf = TypeIdentifier("public.rtf")
    public static let delimitedText = TypeIdentifier("public.delimited-values-text")
    public static let commaSeparatedText = TypeIdentifier("public.comma-separated-values-text")
    public static let markdown = TypeIdentifier("net.daringfireball.markdown")
    public static let sourceCode = TypeIdentifier("public.source-code")
    public static let script = TypeIdentifier("public.script")
    public static let shellScript = TypeIdentifier("public.shell-script")
    public static let pythonScript = TypeIdentifier("public.python-script")
    public static let cSource = TypeIdentifier("public.c-source")

    // MARK: URLs, documents, archives
    public static let url = TypeIdentifier("public.url")
    public static let fileURL = TypeIdentifier("public.file-url")
    public static let pdf = TypeIdentifier("com.adobe.pdf")
    public static let archive = TypeIdentifier("public.archive")
    public static let zip = TypeIdentifier("public.zip-archive")
    public static let gzip = TypeIdentifier("org.gnu.gnu-zip-archive")
    public static let bz2 = TypeIdentifier("public.bzip2-archive")
    public static let tar = TypeIdentifier("public.tar-archive")

    /// The prefix of identifiers made from a MIME type Ferry does not declare.
    public static let dynamicMIMEPrefix = "dyn.mime."

    /// Whether this is a dynamic identifier made from an undeclared MIME type.
    public var isDynamic: Bool { rawValue.hasPrefix(Self.dynamicMIMEPrefix) }

    /// Every type Ferry declares, with its supertypes, MIME types and extensions.
    public static var declared: Set<TypeIdentifier> { Set(TypeRegistry.declarations.keys) }

    /// Whether Ferry declares this type (its supertypes, MIME types and extensions).
    public var isDeclared: Bool { TypeRegistry.declarations[self] != nil }

    /// Every type this one conforms to, directly or not, itself excluded (`public.jpeg`:
    /// `public.image`, `public.data`, `public.content`, `public.item`).
    public var supertypes: Set<TypeIdentifier> {
        if isDynamic { return [.data, .item] }
        return TypeRegistry.ancestors[self] ?? []
    }

    /// Whether a value of this type is also a `type`: reflexive (`.png` conforms to `.png`)
    /// and transitive (`.png` → `.image` → `.data` → `.item`).
    public func conforms(to type: TypeIdentifier) -> Bool {
        self == type || supertypes.contains(type)
    }

    /// `type.conforms(to: self)`.
    public func isSupertype(of type: TypeIdentifier) -> Bool { type.conforms(to: self) }

    /// The MIME type to label this content with (`image/jpeg`); `nil` when there is none
    /// (`public.image`, `public.url`). `public.data` gives `application/octet-stream`.
    public var preferredMIMEType: String? {
        if isDynamic { return String(rawValue.dropFirst(Self.dynamicMIMEPrefix.count)) }
        return TypeRegistry.declarations[self]?.mimeTypes.first
    }

    /// The extension to name a file of this type with, without the dot (`jpeg`, `png`).
    public var preferredFilenameExtension: String? {
        TypeRegistry.declarations[self]?.extensions.first
    }

    /// The type of content labelled `mimeType`: case and parameters are ignored
    /// (`Text/Plain; charset=utf-8` is `public.plain-text`), known aliases are understood
    /// (`image/jpg`), and an unknown but well-formed type gives a dynamic identifier
    /// (`dyn.mime.application/x-foo`). `nil` only when `mimeType` is not `type/subtype`.
    public init?(mimeType: String) {
        guard let normalized = Self.normalizedMIMEType(mimeType) else { return nil }
        self = TypeRegistry.byMIMEType[normalized] ?? TypeIdentifier(Self.dynamicMIMEPrefix + normalized)
    }

    /// The type of a file named `*.ext` (case-insensitive, with or without the dot);
    /// `nil` for an extension Ferry does not declare. A name alone never decides what a
    /// file is: ``detect(fileAt:)`` reads its bytes.
    public init?(filenameExtension: String) {
        var ext = filenameExtension.lowercased()
        if ext.hasPrefix(".") { ext.removeFirst() }
        guard let type = TypeRegistry.byExtension[ext] else { return nil }
        self = type
    }

    /// `type/subtype` in lower case without parameters, or `nil` when malformed.
    static func normalizedMIMEType(_ mimeType: String) -> String? {
        let essence = mimeType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = essence.trimmingCharacters(in: .whitespaces).lowercased()
        let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false)
        // RFC 2045 tokens: printable ASCII without spaces or separators.
        let separators = Set("()<>@,;:\\\"/[]?= ")
        func isToken(_ part: Substring) -> Bool {
            !part.isEmpty && part.unicodeScalars.allSatisfy { $0.value > 32 && $0.value < 127 && !separators.contains(Character($0)) }
        }
        guard parts.count == 2, isToken(parts[0]), isToken(parts[1]) else { return nil }
        return trimmed
    }
}
