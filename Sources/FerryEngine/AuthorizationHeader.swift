import Crypto
import FerryCore
import Foundation

/// Digest's algorithms (RFC 7616 §3.3): MD5 or SHA-256, each with or without `-sess`.
struct DigestAlgorithm: Equatable {
    enum Hash { case md5, sha256 }
    var hash: Hash
    var session: Bool
    var name: String

    /// nil for an algorithm the engine does not speak (SHA-512-256 among them); no parameter is MD5.
    init?(_ parameter: String?) {
        let text = (parameter ?? "MD5").uppercased()
        switch text {
        case "MD5": (hash, session) = (.md5, false)
        case "MD5-SESS": (hash, session) = (.md5, true)
        case "SHA-256": (hash, session) = (.sha256, false)
        case "SHA-256-SESS": (hash, session) = (.sha256, true)
        default: return nil
        }
        name = parameter ?? "MD5"
    }

    func digest(_ text: String) -> String {
        let data = Data(text.utf8)
        switch hash {
        case .md5: return Insecure.MD5.hash(data: data).map { String(format: "%02x", $0) }.joined()
        case .sha256: return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        }
    }
}

/// The `Authorization` field that answers a challenge with a credential.
enum AuthorizationHeader {
    /// `Basic base64(user:password)` (RFC 7617), or the Digest response (RFC 7616) for
    /// `method` and `url`. `cnonce` is fresh for each answer; `count` is how many times this
    /// nonce was used (`nc`).
    static func value(
        answering offer: ChallengeOffer, with credential: Credential, method: String, url: URL,
        cnonce: String = randomNonce(), count: Int = 1
    ) -> String? {
        switch offer.scheme {
        case "basic":
            return "Basic " + Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
        case "digest":
            return digest(offer, credential, method: method, url: url, cnonce: cnonce, count: count)
        default:
            return nil
        }
    }

    private static func digest(_ offer: ChallengeOffer, _ credential: Credential, method: String, url: URL, cnonce: String, count: Int) -> String? {
        let p = offer.parameters
        guard let nonce = p["nonce"], let algorithm = DigestAlgorithm(p["algorithm"]) else { return nil }
        let realm = p["realm"] ?? ""
        let path = url.path(percentEncoded: true)
        let uri = (path.isEmpty ? "/" : path) + (url.query(percentEncoded: true).map { "?" + $0 } ?? "")
        // `auth` when offered; `auth-int` alone (a digest of the body) is not supported.
        let qops = (p["qop"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let qop: String? = qops.contains("auth") ? "auth" : nil
        if !qops.isEmpty && qop == nil { return nil }
        let nc = String(format: "%08x", count)
        var ha1 = algorithm.digest("\(credential.user):\(realm):\(credential.password)")
        if algorithm.session { ha1 = algorithm.digest("\(ha1):\(nonce):\(cnonce)") }
        let ha2 = algorithm.digest("\(method):\(uri)")
        let response = qop.map { algorithm.digest("\(ha1):\(nonce):\(nc):\(cnonce):\($0):\(ha2)") } ?? algorithm.digest("\(ha1):\(nonce):\(ha2)")
        var fields = [
            "username=\(quote(credential.user))", "realm=\(quote(realm))", "nonce=\(quote(nonce))", "uri=\(quote(uri))",
            "algorithm=\(algorithm.name)", "response=\(quote(response))",
        ]
        if let qop { fields += ["qop=\(qop)", "nc=\(nc)", "cnonce=\(quote(cnonce))"] }
        if let opaque = p["opaque"] { fields.append("opaque=\(quote(opaque))") }
        return "Digest " + fields.joined(separator: ", ")
    }

    private static func quote(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func randomNonce() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
