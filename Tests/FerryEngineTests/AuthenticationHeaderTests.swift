@testable import FerryEngine
import Foundation
import Testing

/// Reading `WWW-Authenticate` and answering it: RFC 7616's own worked example as the known answer.
@Suite("Authentication headers")
struct AuthenticationHeaderTests {
    @Test("several challenges in one field and across fields; quoted values with escapes; the strongest one the engine speaks")
    func offers() throws {
        let offers = ChallengeOffer.parse([
            #"Digest realm="a, b", nonce="n1", qop="auth,auth-int", algorithm=SHA-512-256, Basic realm="plain""#,
            #"Digest realm="x\"y", nonce=n2, algorithm=MD5"#,
            "Bearer",
        ])
        #expect(offers.map(\.scheme) == ["digest", "basic", "digest", "bearer"])
        #expect(offers[0].parameters["realm"] == "a, b" && offers[0].parameters["qop"] == "auth,auth-int")
        #expect(offers[2].parameters["realm"] == #"x"y"# && offers[2].parameters["nonce"] == "n2")
        let best = try #require(ChallengeOffer.strongest(offers))
        #expect(best.parameters["nonce"] == "n2", "SHA-512-256 is not spoken: Digest with MD5 wins over Basic")
        #expect(ChallengeOffer.strongest(ChallengeOffer.parse(["Bearer realm=\"api\""])) == nil)
        #expect(ChallengeOffer.parse(["=\"", ",,,", ""]).isEmpty, "malformed fields end the reading, no loop")
    }

    @Test("Digest's response is RFC 7616's example (§3.9.1), with MD5 and with SHA-256; Basic is base64 of user:password")
    func answers() throws {
        let url = URL(string: "http://www.example.org/dir/index.html")!
        let credential = Credential(user: "Mufasa", password: "Circle of Life")
        for (algorithm, expected) in [
            ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
            ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        ] {
            let offer = try #require(ChallengeOffer.parse([
                #"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=\#(algorithm), "#
                    + #"nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#,
            ]).first)
            let value = try #require(AuthorizationHeader.value(
                answering: offer, with: credential, method: "GET", url: url, cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"))
            #expect(value.contains(#"response="\#(expected)""#), "\(value)")
            #expect(value.contains(#"uri="/dir/index.html""#) && value.contains("nc=00000001") && value.contains("qop=auth,"))
            #expect(value.contains(#"opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#))
        }
        let basic = try #require(ChallengeOffer.parse(["Basic realm=\"r\""]).first)
        #expect(AuthorizationHeader.value(answering: basic, with: Credential(user: "Aladdin", password: "open sesame"), method: "GET", url: url)
                == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        let bodyDigest = try #require(ChallengeOffer.parse([#"Digest realm="r", nonce="n", qop="auth-int""#]).first)
        #expect(AuthorizationHeader.value(answering: bodyDigest, with: credential, method: "GET", url: url) == nil, "auth-int alone is not spoken")
    }

    @Test("Digest's uri is the request target: an empty path is /, the query follows it")
    func digestTarget() throws {
        let offer = try #require(ChallengeOffer.parse([#"Digest realm="r", nonce="n", qop="auth""#]).first)
        let value = try #require(AuthorizationHeader.value(
            answering: offer, with: Credential(user: "u", password: "p"), method: "GET", url: URL(string: "https://h.example?x=1")!))
        #expect(value.contains(#"uri="/?x=1""#), "\(value)")
    }

    @Test("a redirect to another scheme, host or port drops Authorization and Cookie; the same origin keeps them")
    func redirectsDropCredentials() throws {
        let engine = try TransferEngine(configuration: EngineConfiguration())
        var request = Request(url: URL(string: "https://h.example/a")!)
        request.headers["Authorization"] = "Basic eDp5"
        request.headers["Cookie"] = "s=1"
        for target in ["http://h.example/b", "https://other.example/b", "https://h.example:8443/b"] {
            let next = try #require(engine.redirected(request, to: URL(string: target)!, status: 302, hasStreamBody: false))
            #expect(next.headers["Authorization"] == nil && next.headers["Cookie"] == nil, "\(target)")
        }
        let same = try #require(engine.redirected(request, to: URL(string: "https://h.example/c")!, status: 302, hasStreamBody: false))
        #expect(same.headers["Authorization"] != nil && same.headers["Cookie"] == "s=1")
    }
}
