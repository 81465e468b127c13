import Foundation

/// A small `multipart/form-data` reader for bounded bodies (image uploads, Dropbox's form
/// upload). Parts keep their bytes; names, filenames and types come from their headers.
struct MultipartPart: Sendable {
    var name: String?
    var filename: String?
    var contentType: String?
    var data: [UInt8]

    var text: String { String(decoding: data, as: UTF8.self) }
}

enum Multipart {
    /// The boundary of a `multipart/form-data; boundary=…` content type, or nil.
    static func boundary(_ contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" {
                return pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    /// Splits `body` on `boundary`; throws a 400 naming what is malformed.
    static func parse(_ body: [UInt8], boundary: String) throws(APIError) -> [MultipartPart] {
        let delimiter = Array(("--" + boundary).utf8)
        var parts: [MultipartPart] = []
        guard var position = find(delimiter, in: body, from: 0) else {
            throw APIError(.badRequest, "Malformed multipart body: boundary not found")
        }
        while true {
            position += delimiter.count
            if body.count >= position + 2, body[position] == UInt8(ascii: "-"), body[position + 1] == UInt8(ascii: "-") { break }
            guard let headerEnd = find(Array("\r\n\r\n".utf8), in: body, from: position) else {
                throw APIError(.badRequest, "Malformed multipart body: part headers not terminated")
            }
            let headerText = String(decoding: body[position..<headerEnd], as: UTF8.self)
            let contentStart = headerEnd + 4
            guard let next = find(Array("\r\n".utf8) + delimiter, in: body, from: contentStart) else {
                throw APIError(.badRequest, "Malformed multipart body: closing boundary not found")
            }
            var part = MultipartPart(data: Array(body[contentStart..<next]))
            for line in headerText.split(separator: "\r\n") {
                let pieces = line.split(separator: ":", maxSplits: 1)
                guard pieces.count == 2 else { continue }
                let name = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
                let value = pieces[1].trimmingCharacters(in: .whitespaces)
                if name == "content-type" { part.contentType = value }
                if name == "content-disposition" {
                    part.name = dispositionParameter(value, "name")
                    part.filename = dispositionParameter(value, "filename")
                }
            }
            parts.append(part)
            position = next + 2
        }
        return parts
    }

    private static func dispositionParameter(_ value: String, _ key: String) -> String? {
        for piece in value.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == key {
                return pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        let first = needle[0]
        var i = start
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first {
                var j = 1
                while j < needle.count && haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }
}
