// HTTP authentication for TestHTTPServer (the routes table is in TestHTTPServer+Routes.swift):
// | `GET /basic-auth/<user>/<password>` | 200 `authenticated <user>` with the right Basic credential, else 401 `Basic realm="ferry"` |
// | `GET /digest-auth/<qop>/<user>/<password>?algorithm=MD5|SHA-256` | the same with Digest (RFC 7616; qop `auth` or `none`); a fresh nonce per challenge |
//
// The server checks credentials its own way (this file), and a test checks it against curl's
// `--digest`, so a mistake shared with the engine's answer would show.
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

extension TestHTTPServer {
    func basicAuth(_ ex: Exchange, _ out: Responder, user: String, password: String) async throws -> Outcome {
        let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        if ex.head.headers.first(name: "authorization") == expected {
            try await out.simple(.ok, "authenticated \(user)")
        } else {
            try await out.simple(.unauthorized, "who are you?\n", [("www-authenticate", "Basic realm=\"ferry\", charset=\"UTF-8\"")])
        }
        return .keepAlive
    }

    func digestAuth(_ ex: Exchange, _ out: Responder, qop: String, user: String, password: String) async throws -> Outcome {
        let algorithm = ex.target.query["algorithm"] ?? "MD5"
        func hash(_ text: String) -> String {
            let data = Data(text.utf8)
            return algorithm.uppercased() == "SHA-256"
                ? SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
                : Insecure.MD5.hash(data: data).map { String(format: "%02x", $0) }.joined()
        }
        if let header = ex.head.headers.first(name: "authorization"), header.hasPrefix("Digest ") {
            let fields = Self.digestFields(String(header.dropFirst(7)))
            let ha1 = hash("\(user):ferry:\(password)")
            let ha2 = hash("\(ex.head.method.rawValue):\(fields["uri"] ?? "")")
            let expected = qop == "auth"
                ? hash("\(ha1):\(fields["nonce"] ?? ""):\(fields["nc"] ?? ""):\(fields["cnonce"] ?? ""):auth:\(ha2)")
                : hash("\(ha1):\(fields["nonce"] ?? ""):\(ha2)")
            let issued = state.withLock { $0.digestNonces.contains(fields["nonce"] ?? "") }
            if issued, fields["username"] == user, fields["uri"] == ex.head.uri, fields["response"] == expected, fields["opaque"] == "ferry-opaque" {
                try await out.simple(.ok, "authenticated \(user)")
                return .keepAlive
            }
        }
        let nonce = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        _ = state.withLock { $0.digestNonces.insert(nonce) }
        var challenge = "Digest realm=\"ferry\", nonce=\"\(nonce)\", opaque=\"ferry-opaque\", algorithm=\(algorithm)"
        if qop == "auth" { challenge += ", qop=\"auth\"" }
        try await out.simple(.unauthorized, "who are you?\n", [("www-authenticate", challenge)])
        return .keepAlive
    }

    /// `name=value` and `name="value"` pairs of a Digest `Authorization` field.
    static func digestFields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        var rest = Substring(text)
        while let equals = rest.firstIndex(of: "=") {
            let name = rest[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: " ,")).lowercased()
            rest = rest[rest.index(after: equals)...]
            if rest.first == "\"" {
                rest = rest.dropFirst()
                let end = rest.firstIndex(of: "\"") ?? rest.endIndex
                fields[name] = String(rest[..<end])
                rest = rest[end...].dropFirst()
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                fields[name] = rest[..<end].trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
        }
        return fields
    }
}
