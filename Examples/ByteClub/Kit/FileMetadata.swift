public import Foundation

/// One file or folder as the service describes it (Dropbox v1's metadata object).
public struct FileMetadata: Codable, Sendable, Equatable {
    public var path: String
    public var isDirectory: Bool
    public var bytes: Int64
    /// The revision: what `parent_rev` names when saving an edit.
    public var rev: String?
    public var modified: Date?
    public var mimeType: String?
    public var thumbExists: Bool
    /// Who wrote it last, in a shared folder.
    public var modifier: Member?
    /// A listed folder's children.
    public var contents: [FileMetadata]?

    public struct Member: Codable, Sendable, Equatable {
        public var uid: Int64?
        public var displayName: String

        enum CodingKeys: String, CodingKey {
            case uid
            case displayName = "display_name"
        }
    }

    enum CodingKeys: String, CodingKey {
        case path, bytes, rev, modified, contents, modifier
        case isDirectory = "is_dir", mimeType = "mime_type", thumbExists = "thumb_exists"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        path = try c.decode(String.self, forKey: .path)
        isDirectory = try c.decodeIfPresent(Bool.self, forKey: .isDirectory) ?? false
        bytes = try c.decodeIfPresent(Int64.self, forKey: .bytes) ?? 0
        rev = try c.decodeIfPresent(String.self, forKey: .rev)
        modified = try c.decodeIfPresent(String.self, forKey: .modified).flatMap(Self.date(rfc2822:))
        mimeType = try c.decodeIfPresent(String.self, forKey: .mimeType)
        thumbExists = try c.decodeIfPresent(Bool.self, forKey: .thumbExists) ?? false
        modifier = try c.decodeIfPresent(Member.self, forKey: .modifier)
        contents = try c.decodeIfPresent([FileMetadata].self, forKey: .contents)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(isDirectory, forKey: .isDirectory)
        try c.encode(bytes, forKey: .bytes)
        try c.encodeIfPresent(rev, forKey: .rev)
        try c.encodeIfPresent(modified.map(Self.rfc2822), forKey: .modified)
        try c.encodeIfPresent(mimeType, forKey: .mimeType)
        try c.encode(thumbExists, forKey: .thumbExists)
        try c.encodeIfPresent(modifier, forKey: .modifier)
        try c.encodeIfPresent(contents, forKey: .contents)
    }

    /// The last path component: a note's or photo's name.
    public var name: String { path.split(separator: "/").last.map(String.init) ?? path }

    /// `Sat, 21 Aug 2010 22:31:20 +0000`, the service's date format.
    static func date(rfc2822 text: String) -> Date? { formatter.date(from: text) }
    static func rfc2822(_ date: Date) -> String { formatter.string(from: date) }

    private static let formatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        return formatter
    }()
}

/// A note: a `.txt` file in the club's folder.
public struct Note: Sendable, Equatable, Codable {
    public var metadata: FileMetadata
    public var name: String { metadata.name }
    public var author: String? { metadata.modifier?.displayName }

    /// The tutorial's rule: only `.txt` files are notes.
    public static func isNote(_ metadata: FileMetadata) -> Bool {
        !metadata.isDirectory && metadata.path.lowercased().hasSuffix(".txt")
    }
}

/// A photo in the club's `photos` folder, with its cached thumbnail once fetched.
public struct Photo: Sendable, Equatable, Codable {
    public var metadata: FileMetadata
    /// The thumbnail's file in the cache, when it could be fetched.
    public var thumbnail: URL?
    public var name: String { metadata.name }

    public init(metadata: FileMetadata, thumbnail: URL? = nil) {
        self.metadata = metadata
        self.thumbnail = thumbnail
    }
}
