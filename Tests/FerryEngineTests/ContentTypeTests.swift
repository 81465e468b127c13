import FerryEngine
import Foundation
import Testing

/// `Content-Type` read as bytes: what `mimeType` and `textEncodingName` report.
@Suite("Content-Type")
struct ContentTypeTests {
    @Test("media type lowercased and without parameters; charset unquoted, as sent", arguments: [
        ("text/html", "text/html", nil),
        ("Text/HTML; Charset=UTF-8", "text/html", "UTF-8"),
        ("application/json;charset=\"utf-8\"", "application/json", "utf-8"),
        (" \timage/png \t; q=1 ;  charset = iso-8859-1 ", "image/png", "iso-8859-1"),
        ("text/plain; format=flowed", "text/plain", nil),
        ("text/plain; charset=", "text/plain", ""),
        ("text/plain; charset=a; charset=b", "text/plain", "a"),
        ("", "", nil),
        ("; charset=utf-8", "", "utf-8"),
        ("tExt/Ünïcode; charset=x", "text/ünïcode", "x"),
    ] as [(String, String, String?)])
    func reads(value: String, mediaType: String, charset: String?) {
        let type = ContentType(value)
        #expect(type.mediaType == mediaType)
        #expect(type.charset == charset)
    }

    @Test("a response's mimeType: nil without the header")
    func response() {
        let url = URL(string: "http://example.com/")!
        #expect(Response(url: url, statusCode: 200, headers: [:]).mimeType == nil)
        #expect(Response(url: url, statusCode: 200, headers: ["Content-Type": "Text/Plain; charset=utf-8"]).mimeType == "text/plain")
    }
}
