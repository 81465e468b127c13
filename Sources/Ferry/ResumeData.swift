import Foundation

/// What `cancel(byProducingResumeData:)` hands out: enough to continue a download later,
/// in this process or another. An opaque blob to callers; its format is versioned.
///
/// Layout: the 8 bytes `FERRYRD\n`, then JSON with `"version": 1`. A reader refuses a
/// higher version rather than guessing.
struct DownloadResumeData: Codable, Equatable {
    static let magic = Data("FERRYRD\n".utf8)
    static let currentVersion = 1

    var version: Int
    var url: URL
    var method: String
    var headers: [[String]]
    /// The partial file, kept on disk until the download is resumed or given up.
    var partialFile: String
    var bytesReceived: Int64
    /// A strong ETag or Last-Modified, sent as `If-Range`.
    var validator: String
    var expectedSHA256: String?

    init(request: Request, partialFile: URL, bytesReceived: Int64, validator: String) {
        self.version = Self.currentVersion
        self.url = request.url
        self.method = request.method
        self.headers = request.headers.map { [$0.name, $0.value] }
        self.partialFile = partialFile.path
        self.bytesReceived = bytesReceived
        self.validator = validator
        self.expectedSHA256 = request.expectedSHA256
    }

    func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Self.magic + ((try? encoder.encode(self)) ?? Data())
    }

    static func decode(_ data: Data) throws -> DownloadResumeData {
        guard data.count > magic.count, data.prefix(magic.count) == magic else {
            throw FerryError(.cannotDecodeResumeData, "this is not Ferry resume data (it does not start with FERRYRD)")
        }
        let json = data.dropFirst(magic.count)
        struct Header: Decodable { var version: Int }
        guard let header = try? JSONDecoder().decode(Header.self, from: json) else {
            throw FerryError(.cannotDecodeResumeData, "the resume data is damaged: its JSON does not parse")
        }
        guard header.version <= currentVersion, header.version >= 1 else {
            throw FerryError(.cannotDecodeResumeData, "resume data version \(header.version) is newer than this Ferry understands (\(currentVersion))")
        }
        do {
            let decoded = try JSONDecoder().decode(DownloadResumeData.self, from: json)
            guard decoded.bytesReceived >= 0, !decoded.validator.isEmpty, decoded.url.scheme != nil else {
                throw FerryError(.cannotDecodeResumeData, "the resume data names no valid URL, offset or validator")
            }
            return decoded
        } catch let error as FerryError {
            throw error
        } catch {
            throw FerryError(.cannotDecodeResumeData, "the resume data is damaged: \(error)", underlying: error)
        }
    }

    var request: Request {
        var request = Request(url: url, method: method)
        for pair in headers where pair.count == 2 { request.headers.add(name: pair[0], value: pair[1]) }
        request.expectedSHA256 = expectedSHA256
        return request
    }
}
