import CMagic
public import Foundation

extension TypeIdentifier {
    /// What the file at `url` is, decided from its bytes by libmagic; the name only refines
    /// within what the bytes say.
    ///
    /// ```swift
    /// try TypeIdentifier.detect(fileAt: URL(fileURLWithPath: "photo.jpg"))   // .png if it is a PNG
    /// try TypeIdentifier.detect(fileAt: URL(fileURLWithPath: "data.json"))   // .json
    /// ```
    ///
    /// The rules, with C the type of libmagic's MIME type and N the type of the file's
    /// extension (when Ferry declares it):
    /// - N is taken when it conforms to C and is more specific (C `public.text`, N `.csv`).
    /// - Text: libmagic's `text/plain` only says "some text", so any N that conforms to
    ///   `public.text` is taken (`x.json` that libmagic calls text/plain is `public.json`).
    ///   A more specific text type from libmagic (`text/html`) is kept whatever the name.
    /// - An empty file is N when N is text (an empty note is still text), else `public.data`.
    /// - Otherwise C: a PNG named `photo.jpg` is `public.png`, text named `x.jpg` is text,
    ///   and bytes libmagic does not know are `public.data` whatever the name says.
    /// - A MIME type Ferry does not declare gives a dynamic identifier (`dyn.mime.…`).
    ///
    /// Symbolic links are followed. Throws ``ShareKitError`` naming the file when it is
    /// missing (`.fileNotFound`) or cannot be read (`.unreadable`).
    public static func detect(fileAt url: URL) throws -> TypeIdentifier {
        let path = url.path
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            let code: ShareKitError.Code = errno == ENOENT || errno == ENOTDIR ? .fileNotFound : .unreadable
            throw ShareKitError("\(path): \(code == .fileNotFound ? "no such file" : reason)", code: code, path: path)
        }
        if info.st_mode & S_IFMT == S_IFREG {
            // libmagic reports an unreadable file as a type ("regular file, no read
            // permission"); opening it first turns that into an error that says so.
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw ShareKitError("\(path): cannot be read: \(String(cString: strerror(errno)))", code: .unreadable, path: path)
            }
            close(descriptor)
        }
        let mime = try MagicDatabase.shared.mimeType { cookie in magic_file(cookie, path) }
        return refine(mimeType: mime, filename: url.lastPathComponent, path: path)
    }

    /// What `data` is, decided by libmagic from its bytes; `filename`, when given, refines
    /// within that as in ``detect(fileAt:)``.
    ///
    /// ```swift
    /// try TypeIdentifier.detect(data: Data("{\"a\": 1}".utf8))                   // .json
    /// try TypeIdentifier.detect(data: Data("[1]".utf8), filename: "list.json")   // .json
    /// ```
    public static func detect(data: Data, filename: String? = nil) throws -> TypeIdentifier {
        let mime = try data.withUnsafeBytes { buffer in
            try MagicDatabase.shared.mimeType { cookie in magic_buffer(cookie, buffer.baseAddress, buffer.count) }
        }
        return refine(mimeType: mime, filename: filename, path: nil)
    }

    /// The rules of ``detect(fileAt:)``: libmagic's answer, refined by the name.
    static func refine(mimeType: String, filename: String?, path: String?) -> TypeIdentifier {
        // libmagic says inode/x-empty for an empty file, application/x-empty for no bytes.
        let isEmpty = mimeType == "inode/x-empty" || mimeType == "application/x-empty"
        let content = TypeIdentifier(mimeType: mimeType) ?? .data
        let ext = filename.map { ($0 as NSString).pathExtension } ?? ""
        guard !ext.isEmpty, let named = TypeIdentifier(filenameExtension: ext) else {
            return isEmpty ? .data : content
        }
        if isEmpty {
            return named.conforms(to: .text) ? named : .data
        }
        if named != content, named.conforms(to: content), content != .data {
            return named
        }
        if content == .plainText, named.conforms(to: .text) {
            return named
        }
        return content
    }
}

/// libmagic's cookie (`magic_t`) is not thread-safe and loading its database costs
/// milliseconds: one cookie per process, opened on first use, used only under `lock`.
final class MagicDatabase: @unchecked Sendable {  // `cookie` is only touched with `lock` held
    static let shared = MagicDatabase()

    private let lock = NSLock()
    private var cookie: magic_t?

    /// Runs `query` (magic_file or magic_buffer) and returns the MIME type it found.
    func mimeType(_ query: (magic_t) -> UnsafePointer<CChar>?) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        let cookie = try openedCookie()
        guard let answer = query(cookie) else {
            let message = magic_error(cookie).map { String(cString: $0) } ?? "no answer"
            throw ShareKitError("libmagic: \(message)", code: .library)
        }
        return String(cString: answer)
    }

    /// The cookie, opened and loaded with the system's database on first use. Call with
    /// `lock` held.
    private func openedCookie() throws -> magic_t {
        if let cookie { return cookie }
        guard let opened = magic_open(MAGIC_MIME_TYPE | MAGIC_SYMLINK | MAGIC_ERROR) else {
            throw ShareKitError("libmagic: cannot start (\(String(cString: strerror(errno))))", code: .library)
        }
        guard magic_load(opened, nil) == 0 else {
            let message = magic_error(opened).map { String(cString: $0) } ?? "unknown error"
            magic_close(opened)
            throw ShareKitError(
                "libmagic: cannot load its database (\(message)); install libmagic-mgc (scripts/install-deps)", code: .library)
        }
        cookie = opened
        return opened
    }
}
