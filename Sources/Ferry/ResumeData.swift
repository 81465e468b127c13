import struct FerryProtocol.DownloadResumeToken
import Foundation

/// Resume data of a download, as apps hold it: `FERRYRD\n` + JSON, version 1, the same blob
/// ferryd reads and writes (``DownloadResumeToken``, `docs/ferry.md`), so a download paused in
/// one kind of session can go on in the other, in another process, after a restart.
struct DownloadResumeData: Equatable {
    var token: DownloadResumeToken

    init(request: Request, partialFile: URL, bytesReceived: Int64, validator: String) {
        token = DownloadResumeToken(
            url: request.url, method: request.method, headers: request.headers.map { [$0.name, $0.value] },
            partialFile: partialFile.path, bytesReceived: bytesReceived, validator: validator,
            expectedSHA256: request.expectedSHA256)
    }

    private init(token: DownloadResumeToken) { self.token = token }

    var partialFile: String { token.partialFile }
    var validator: String { token.validator }

    func encoded() -> Data { token.encoded() }

    static func decode(_ data: Data) throws(FerryError) -> DownloadResumeData {
        do {
            return DownloadResumeData(token: try DownloadResumeToken.decode(data))
        } catch {
            throw FerryError(.cannotDecodeResumeData, error.message, underlying: error)
        }
    }

    var request: Request {
        var request = Request(url: token.url, method: token.method)
        for pair in token.headers where pair.count == 2 { request.headers.add(name: pair[0], value: pair[1]) }
        request.expectedSHA256 = token.expectedSHA256
        return request
    }
}
