import FerryCore
public import Foundation

/// A server's demand for credentials: a `401` whose `WWW-Authenticate` offers HTTP Basic or
/// Digest (RFC 7617, RFC 7616). The engine asks its observer what to do
/// (``TransferObserver/transferDidReceive(challenge:)``) and sends the request again with the
/// answer's credential.
///
/// ```swift
/// func transferDidReceive(challenge: AuthenticationChallenge) async -> ChallengeAnswer {
///     challenge.previousFailureCount < 2 ? .useCredential(Credential(user: "alice", password: secret)) : .cancel
/// }
/// ```
public struct AuthenticationChallenge: Sendable {
    /// Where the credential is for: host, port, scheme, realm and method.
    public var protectionSpace: ProtectionSpace
    /// How many credentials this protection space already refused during the transfer.
    public var previousFailureCount: Int
    /// The `401` response that asked.
    public var failureResponse: Response
    /// The credential the engine would use by default (the store's or the URL's), if any.
    public var proposedCredential: Credential?

    /// For a challenge met elsewhere (ferryd's, asked of a background session's app).
    package init(protectionSpace: ProtectionSpace, previousFailureCount: Int, failureResponse: Response, proposedCredential: Credential?) {
        self.protectionSpace = protectionSpace
        self.previousFailureCount = previousFailureCount
        self.failureResponse = failureResponse
        self.proposedCredential = proposedCredential
    }
}

/// A realm on a server, as a challenge names it.
public struct ProtectionSpace: Hashable, Sendable {
    public var host: String
    public var port: Int
    /// `http` or `https`.
    public var scheme: String
    public var realm: String?
    public var method: AuthenticationMethod

    public init(host: String, port: Int, scheme: String, realm: String?, method: AuthenticationMethod) {
        self.host = host
        self.port = port
        self.scheme = scheme
        self.realm = realm
        self.method = method
    }

    /// The scheme, host and port a space is on: where its credentials may go.
    public struct Origin: Hashable, Sendable {
        public var scheme: String
        public var host: String
        public var port: Int

        /// `url`'s, in lower case, with the port its scheme implies when it names none; nil
        /// without a host.
        public init?(_ url: URL) {
            guard let host = url.host?.lowercased() else { return nil }
            let scheme = url.scheme?.lowercased() ?? "http"
            self.init(scheme: scheme, host: host, port: url.port ?? (scheme == "https" ? 443 : 80))
        }

        public init(scheme: String, host: String, port: Int) {
            self.scheme = scheme
            self.host = host
            self.port = port
        }
    }

    public init(_ origin: Origin, realm: String?, method: AuthenticationMethod) {
        self.init(host: origin.host, port: origin.port, scheme: origin.scheme, realm: realm, method: method)
    }

    public var origin: Origin { Origin(scheme: scheme, host: host, port: port) }
}

/// The HTTP authentication schemes the engine answers, and the two questions about a TLS
/// connection (``ConnectionChallenge``).
public enum AuthenticationMethod: String, Hashable, Sendable {
    case httpBasic
    case httpDigest
    case serverTrust
    case clientCertificate
}

/// A user name and password.
public struct Credential: Hashable, Sendable {
    public var user: String
    public var password: String
    /// Whether the transfer's ``CredentialSource`` keeps it once the server accepted it.
    public var keep: Bool

    public init(user: String, password: String, keep: Bool = false) {
        self.user = user
        self.password = password
        self.keep = keep
    }
}

/// What to do about a challenge, as URLSession's `AuthChallengeDisposition` says it.
public enum ChallengeAnswer: Sendable {
    /// Send the request again with this credential.
    case useCredential(Credential)
    /// The store's credential for the space, or the URL's user and password, once; without
    /// one, the `401` is the task's response.
    case performDefaultHandling
    /// Fail the task (`userCancelledAuthentication`).
    case cancel
    /// Do not answer this challenge: the `401` is the task's response.
    case rejectProtectionSpace
}

/// Where default credentials come from (Ferry's `URLCredentialStorage` is one), and where
/// credentials a server accepted go.
public protocol CredentialSource: Sendable {
    func defaultCredential(for space: ProtectionSpace) -> Credential?
    /// `credential` (one to ``Credential/keep``) was accepted for `space`: the answer to its challenge was not a `401`.
    func credentialAccepted(_ credential: Credential, for space: ProtectionSpace)
}

/// One challenge of a `WWW-Authenticate` field: its scheme and parameters.
struct ChallengeOffer: Equatable {
    var scheme: String
    var parameters: [String: String]

    /// The offers of every `WWW-Authenticate` field, in order (RFC 9110 §11.6.1: several
    /// challenges may share one field, separated by commas).
    static func parse(_ fields: [String]) -> [ChallengeOffer] {
        fields.flatMap(parseField)
    }

    private static func parseField(_ field: String) -> [ChallengeOffer] {
        var offers: [ChallengeOffer] = []
        var scanner = Substring(field)
        func skipSpaces() { scanner = scanner.drop(while: { $0 == " " || $0 == "\t" || $0 == "," }) }
        func token() -> String {
            let value = scanner.prefix(while: { !" \t,=\"".contains($0) })
            scanner = scanner.dropFirst(value.count)
            return String(value)
        }
        func quoted() -> String {
            scanner = scanner.dropFirst()
            var value = ""
            while let character = scanner.first, character != "\"" {
                scanner = scanner.dropFirst()
                if character == "\\", let escaped = scanner.first {
                    value.append(escaped)
                    scanner = scanner.dropFirst()
                } else {
                    value.append(character)
                }
            }
            scanner = scanner.dropFirst()
            return value
        }
        // Bounded: every turn consumes at least one character or stops.
        while true {
            skipSpaces()
            let scheme = token()
            guard !scheme.isEmpty else { break }
            var parameters: [String: String] = [:]
            while true {
                skipSpaces()
                let saved = scanner
                let name = token()
                scanner = scanner.drop(while: { $0 == " " })
                guard !name.isEmpty, scanner.first == "=" else {
                    scanner = saved  // the next challenge's scheme
                    break
                }
                scanner = scanner.dropFirst().drop(while: { $0 == " " })
                parameters[name.lowercased()] = scanner.first == "\"" ? quoted() : token()
            }
            offers.append(ChallengeOffer(scheme: scheme.lowercased(), parameters: parameters))
            if scanner.isEmpty { break }
        }
        return offers
    }

    /// The offer to answer: Digest with SHA-256, then Digest with MD5, then Basic.
    static func strongest(_ offers: [ChallengeOffer]) -> ChallengeOffer? {
        func rank(_ offer: ChallengeOffer) -> Int? {
            switch offer.scheme {
            case "digest":
                guard offer.parameters["nonce"] != nil, let algorithm = DigestAlgorithm(offer.parameters["algorithm"]) else { return nil }
                return algorithm.hash == .sha256 ? 3 : 2
            case "basic": return 1
            default: return nil
            }
        }
        return offers.compactMap { offer in rank(offer).map { (offer, $0) } }.max { $0.1 < $1.1 }?.0
    }

    var method: AuthenticationMethod { scheme == "digest" ? .httpDigest : .httpBasic }
}

extension TransferEngine {
    /// At most this many credentials are sent in one transfer (a server that refuses them
    /// all ends with its `401`).
    static let maximumCredentialsSent = 8

    /// The request again with an `Authorization` answering `response`'s challenge, or nil when
    /// the `401` is the answer: no challenge the engine speaks, a body that cannot be sent
    /// again, no credential (the observer's, or by default the store's or the URL's, once).
    func answerChallenge(_ response: Response, request: Request, state: inout AttemptState, observer: any TransferObserver) async throws -> Request? {
        guard state.transfer.upload?.isSeekable != false,
            let offer = ChallengeOffer.strongest(ChallengeOffer.parse(response.headers.values(for: "WWW-Authenticate"))),
            let origin = ProtectionSpace.Origin(request.url),
            state.credentialsSent.values.reduce(0, +) < Self.maximumCredentialsSent
        else { return nil }
        let space = ProtectionSpace(origin, realm: offer.parameters["realm"], method: offer.method)
        let failures = state.credentialsSent[space, default: 0]
        let inURL = request.url.user.map { Credential(user: $0.removingPercentEncoding ?? $0, password: request.url.password?.removingPercentEncoding ?? "") }
        let proposed = state.transfer.credentials?.defaultCredential(for: space) ?? inURL
        let challenge = AuthenticationChallenge(protectionSpace: space, previousFailureCount: failures, failureResponse: response, proposedCredential: proposed)
        let answer = await observer.transferDidReceive(challenge: challenge)
        // Stopped while the answer was awaited (its time-out, a cancel): no request goes out.
        try Task.checkCancellation()
        let credential: Credential?
        switch answer {
        case .useCredential(let given): credential = given
        case .performDefaultHandling: credential = failures == 0 ? proposed : nil
        case .rejectProtectionSpace: credential = nil
        case .cancel:
            throw FerryError(.userCancelledAuthentication, "the authentication challenge of \(space.realm.map { "realm \"\($0)\"" } ?? origin.host) was cancelled", url: request.url)
        }
        guard let credential, let value = AuthorizationHeader.value(answering: offer, with: credential, method: request.method, url: request.url)
        else { return nil }
        state.credentialsSent[space] = failures + 1
        state.pendingCredential = (credential, space)
        var next = request
        next.headers["Authorization"] = value
        logger.debug("answering an authentication challenge", metadata: ["method": "\(space.method)", "realm": "\(space.realm ?? "")", "failures": "\(failures)"])
        return next
    }
}
