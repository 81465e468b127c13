/// The types Ferry declares: each one's direct supertypes, MIME types and filename
/// extensions (preferred first), following Apple's declarations. One table, so that the
/// conformance graph, the MIME map and the extension map cannot disagree.
enum TypeRegistry {
    struct Declaration: Sendable {
        var parents: [TypeIdentifier]
        var mimeTypes: [String] = []
        var extensions: [String] = []
    }

    static let declarations: [TypeIdentifier: Declaration] = {
        typealias T = TypeIdentifier
        func d(_ parents: [T], _ mimeTypes: [String] = [], _ extensions: [String] = []) -> Declaration {
            Declaration(parents: parents, mimeTypes: mimeTypes, extensions: extensions)
        }
        return [
            .item: d([]),
            .content: d([]),
            .data: d([.item], ["application/octet-stream"]),
            .compositeContent: d([.content]),
            .directory: d([.item]),
            .folder: d([.directory], ["inode/directory"]),
            .executable: d([.item]),
            .unixExecutable: d([.data, .executable], ["application/x-executable", "application/x-pie-executable"]),

            .image: d([.data, .content]),
            .jpeg: d([.image], ["image/jpeg", "image/jpg", "image/pjpeg"], ["jpeg", "jpg", "jpe"]),
            .png: d([.image], ["image/png"], ["png"]),
            .gif: d([.image], ["image/gif"], ["gif"]),
            .webP: d([.image], ["image/webp"], ["webp"]),
            .heifStandard: d([.image]),
            .heic: d([.heifStandard], ["image/heic"], ["heic"]),
            .heif: d([.heifStandard], ["image/heif"], ["heif"]),
            .tiff: d([.image], ["image/tiff"], ["tiff", "tif"]),
            .bmp: d([.image], ["image/bmp", "image/x-ms-bmp", "image/x-bmp"], ["bmp"]),
            .ico: d([.image], ["image/vnd.microsoft.icon", "image/x-icon"], ["ico"]),
            .svg: d([.image], ["image/svg+xml"], ["svg"]),

            .audiovisualContent: d([.data, .content]),
            .movie: d([.audiovisualContent]),
            .video: d([.movie]),
            .mpeg4Movie: d([.movie], ["video/mp4"], ["mp4"]),
            .quickTimeMovie: d([.movie], ["video/quicktime"], ["mov", "qt"]),
            .avi: d([.movie], ["video/x-msvideo", "video/avi"], ["avi"]),
            .mpeg: d([.movie], ["video/mpeg"], ["mpeg", "mpg"]),
            .audio: d([.audiovisualContent]),
            .mp3: d([.audio], ["audio/mpeg", "audio/mp3"], ["mp3"]),
            .mpeg4Audio: d([.audio], ["audio/mp4", "audio/x-m4a", "audio/m4a"], ["m4a"]),
            .wav: d([.audio], ["audio/wav", "audio/x-wav", "audio/vnd.wave"], ["wav"]),
            .aiff: d([.audio], ["audio/aiff", "audio/x-aiff"], ["aiff", "aif"]),
            .flac: d([.audio], ["audio/flac", "audio/x-flac"], ["flac"]),

            .text: d([.data, .content]),
            .plainText: d([.text], ["text/plain"], ["txt", "text"]),
            .utf8PlainText: d([.plainText]),
            .utf16PlainText: d([.plainText]),
            .html: d([.text], ["text/html"], ["html", "htm"]),
            .xml: d([.text], ["application/xml", "text/xml"], ["xml"]),
            .json: d([.text], ["application/json"], ["json"]),
            .rtf: d([.text], ["text/rtf", "application/rtf"], ["rtf"]),
            .delimitedText: d([.text]),
            .commaSeparatedText: d([.delimitedText], ["text/csv"], ["csv"]),
            .markdown: d([.plainText], ["text/markdown", "text/x-markdown"], ["md", "markdown"]),
            .sourceCode: d([.plainText]),
            .script: d([.sourceCode]),
            .shellScript: d([.script], ["application/x-sh", "text/x-shellscript"], ["sh"]),
            .pythonScript: d([.script], ["text/x-python", "text/x-script.python"], ["py"]),
            .cSource: d([.sourceCode], ["text/x-c"], ["c"]),

            .url: d([.data]),
            .fileURL: d([.url]),
            .pdf: d([.data, .compositeContent], ["application/pdf"], ["pdf"]),
            .archive: d([.data]),
            .zip: d([.archive], ["application/zip"], ["zip"]),
            .gzip: d([.archive], ["application/gzip", "application/x-gzip"], ["gz", "gzip"]),
            .bz2: d([.archive], ["application/x-bzip2"], ["bz2"]),
            .tar: d([.archive], ["application/x-tar"], ["tar"]),
        ]
    }()

    /// Every declared type's transitive supertypes, worked out once.
    static let ancestors: [TypeIdentifier: Set<TypeIdentifier>] = {
        var result: [TypeIdentifier: Set<TypeIdentifier>] = [:]
        func closure(_ type: TypeIdentifier) -> Set<TypeIdentifier> {
            if let known = result[type] { return known }
            var all: Set<TypeIdentifier> = []
            for parent in declarations[type]?.parents ?? [] {
                all.insert(parent)
                all.formUnion(closure(parent))
            }
            result[type] = all
            return all
        }
        for type in declarations.keys { _ = closure(type) }
        return result
    }()

    /// MIME type (lower case, no parameters) → type; each MIME type is declared once.
    static let byMIMEType: [String: TypeIdentifier] = {
        var index: [String: TypeIdentifier] = [:]
        for (type, declaration) in declarations {
            for mime in declaration.mimeTypes { index[mime] = type }
        }
        return index
    }()

    /// Filename extension (lower case, no dot) → type; each extension is declared once.
    static let byExtension: [String: TypeIdentifier] = {
        var index: [String: TypeIdentifier] = [:]
        for (type, declaration) in declarations {
            for ext in declaration.extensions { index[ext] = type }
        }
        return index
    }()
}
