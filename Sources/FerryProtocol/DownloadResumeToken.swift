public import Foundation

/// Resume data for a cancelled or failed download: what `cancel(byProducingResumeData:)`
/// hands out and a ``TaskSubmission/resumeData`` gives back. One format for the library and
/// ferryd, so resume data survives a daemon upgrade and moves between in-process and
/// background sessions.
///
/// Layout: the 8 bytes `FERRYRD\n`, then JSON with `"version": 1`, the request, the partial
/// file, the bytes in it and the validator (`If-Range`). A reader refuses a version it does
/// not know rather than guessing.
///
/// ```swift
/// let data = DownloadResumeToken(url: url, method: "GET", headers: [], partialFile: "/data/x.download",
///                                bytesReceived: 4096, validator: "\"v1\"").encoded()
/// let token = try DownloadResumeToken.decode(data)
/// ```
public struct DownloadResumeToken: Codable, Hashable, Sendable {
    public static let magic = Data("FERRYRD\n".utf8)
    public static let currentVersion = 1

    public var version: Int
    public var url: URL
    public var method: String
    /// `[name, value]` pairs.
    public var headers: [[String]]
    /// The partial file, kept on disk until the download is resumed or given up.
    public var partialFile: String
    public var bytesReceived: Int64
    /// A strong ETag, else a Last-Modified date.
    public var validator: String
    public var expectedSHA256: String?

    public init(
        url: URL, method: String, headers: [[String]], partialFile: String, bytesReceived: Int64, validator: String,
        expectedSHA256: String? = nil
    ) {
        self.version = Self.currentVersion
        self.url = url
        self.method = method
        self.headers = headers
        self.partialFile = partialFile
        self.bytesReceived = bytesReceived
        self.validator = validator
        self.expectedSHA256 = expectedSHA256
    }

    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Self.magic + ((try? encoder.encode(self)) ?? Data())
    }

    /// - Throws: ``FerryProtocolError/Code/badRequest`` saying what is wrong: not Ferry resume
    ///   data, damaged JSON, a version this build does not read, missing fields.
    public static func decode(_ data: Data) throws(FerryProtocolError) -> DownloadResumeToken {
        func bad(_ message: String) -> FerryProtocolError { FerryProtocolError(.badRequest, "resume data: \(message)") }
        guard data.count > magic.count, data.prefix(magic.count) == magic else {
            throw bad("this is not Ferry resume data (it does not start with FERRYRD)")
        }
        let json = Data(data.dropFirst(magic.count))
        struct Version: Decodable { var version: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: json) else { throw bad("its JSON does not parse") }
        guard version.version == currentVersion else {
            throw bad("version \(version.version) is not one this build reads (\(currentVersion))")
        }
        guard let token = try? JSONDecoder().decode(DownloadResumeToken.self, from: json), token.bytesReceived >= 0,
            !token.validator.isEmpty, token.partialFile.hasPrefix("/")
        else { throw bad("it names no valid URL, partial file, offset or validator") }
        return token
    }
}
